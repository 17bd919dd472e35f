// Package check decides whether a history satisfies an isolation level. It
// holds the Checker interface, the Result of a check, the ordered list of
// algorithms (one sub-package each: chronos, lwt, mt, listappend, dsg,
// saturate, polygraph; a brute-force oracle in reference/) and the automatic choice among them: the first, fastest,
// algorithm that is sound and complete for the history at hand. Before any
// algorithm, the shared checks of precheck/ run.
package check
