// Package hidden is internal: its exported names are for the module only.
// Its package clause differs from its folder's name, as an import binds.
package secret

type Config struct{}
type Secret struct{}
type Kept struct{}
type Handle interface{ Close() error }
type Number interface{ ~int }

// New is fine here: an internal package may say anything of its own.
func New() Secret { return Secret{} }
