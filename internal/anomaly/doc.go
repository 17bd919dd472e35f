// Package anomaly is the catalogue of what checkers find: dependency kinds
// (a bitmask over ww, wr, rw, so, rt and the predicate forms), Adya's
// phenomena (G0, G1a, G1b, G1c, G-single, G2-item, G2, G-SI, …), the anomaly
// kinds of the CLI contract (MTC's Figure 5 and Table I: thin-air read,
// lost update, write skew, long fork, …) and the classification of a cycle
// by the shape of its edges. Findings are data; internal/report renders
// their explanations.
package anomaly
