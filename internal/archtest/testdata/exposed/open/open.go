// Package open is public and exposes nothing internal.
package open

import h "example.com/exposed/internal/hidden"

func Count() int { _ = h.New(); return 1 }
