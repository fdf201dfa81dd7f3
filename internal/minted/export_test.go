package minted

// Len is how many exact values the registry keeps.
func Len() int {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return len(reg.kind)
}
