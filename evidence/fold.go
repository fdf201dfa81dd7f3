package evidence

// Fold returns hits without the connection records (Hit.Conn) whose
// connection also left a request hit (same Endpoint, Src and Dst): one
// contact, one line in a verdict. A connection record with no request hit
// stays, since it is then the only proof of that contact (a TLS client that
// refused our certificate, a client that sent garbage). Order is kept.
func Fold(hits []Hit) []Hit {
	type conn struct{ endpoint, src, dst string }
	requested := map[conn]bool{}
	for _, h := range hits {
		if !h.Conn {
			requested[conn{h.Endpoint, h.Src, h.Dst}] = true
		}
	}
	out := make([]Hit, 0, len(hits))
	for _, h := range hits {
		if h.Conn && requested[conn{h.Endpoint, h.Src, h.Dst}] {
			continue
		}
		out = append(out, h)
	}
	return out
}
