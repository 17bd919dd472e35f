package history

// Sub is a sub-history: some of a history's transactions, some of their
// operations, and the way back to the original.
type Sub struct {
	*History
	// Txns maps a transaction of the sub-history to the original's.
	Txns []TxnID
	// Ops maps each transaction's operations to the original's indexes.
	Ops [][]int32
}

// Sub returns the sub-history of the transactions txns (in increasing
// order), keeping the operations keepOp accepts. Keys, sessions, the
// initial state and the name are shared with h, so a sub-history must not
// intern new keys; a white-box version order is restricted to the kept
// transactions.
func (h *History) Sub(txns []TxnID, keepOp func(t TxnID, op int) bool) *Sub {
	s := &Sub{History: &History{Header: h.Header, Keys: h.Keys, Sessions: h.Sessions, Name: h.Name, keyIndex: h.keyIndex},
		Txns: txns, Ops: make([][]int32, len(txns))}
	s.History.Txns = make([]Txn, len(txns))
	for i, t := range txns {
		orig := &h.Txns[t]
		tx := *orig
		tx.Ops = make([]Op, 0, len(orig.Ops))
		for j, op := range orig.Ops {
			if keepOp == nil || keepOp(t, j) {
				tx.Ops = append(tx.Ops, op)
				s.Ops[i] = append(s.Ops[i], int32(j))
			}
		}
		s.History.Txns[i] = tx
	}
	if h.Header.VersionOrder != nil {
		pos := make(map[TxnID]TxnID, len(txns))
		for i, t := range txns {
			pos[t] = TxnID(i)
		}
		vo := make(map[KeyID][]TxnID, len(h.Header.VersionOrder))
		for k, order := range h.Header.VersionOrder {
			for _, t := range order {
				if n, ok := pos[t]; ok {
					vo[k] = append(vo[k], n)
				}
			}
		}
		s.History.Header.VersionOrder = vo
	}
	return s
}

// Orig maps a transaction of the sub-history back (Init stays Init).
func (s *Sub) Orig(t TxnID) TxnID {
	if t < 0 {
		return t
	}
	return s.Txns[t]
}

// OrigOp maps an operation reference of the sub-history back.
func (s *Sub) OrigOp(r OpRef) OpRef {
	if r.Txn < 0 {
		return r
	}
	return OpRef{Txn: s.Txns[r.Txn], Op: s.Ops[r.Txn][r.Op]}
}
