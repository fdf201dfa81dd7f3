// Package face is public and planted with every way an exported
// declaration can expose an internal type, and ways that do not.
package face

import (
	"example.com/exposed/face/internal/deep"
	"example.com/exposed/internal/hidden" // binds secret, its package clause
	h "example.com/exposed/internal/hidden"
)

// Open takes an internal type: found.
func Open(c secret.Config) error { return nil }

// Options has an exported field of an internal type (found), an embedded
// exported internal type (found), and an unexported one (not found).
type Options struct {
	Exported h.Secret
	secret.Config
	quiet h.Secret
}

// Spec is a method of an exported type returning an internal one: found.
func (o Options) Spec() *h.Secret { return nil }

type options struct{}

// Spec of an unexported type: not found.
func (options) Spec() h.Secret { return h.Secret{} }

// helper is unexported: not found.
func helper(s h.Secret) {}

// Runner's method and embedded interface: both found.
type Runner interface {
	Run(deep.Token)
	h.Handle
}

// Default has an internal type (found); Made is a composite literal of
// one (found).
var (
	Default h.Config
	Made    = &h.Secret{}
)

// List is a slice of an internal type: found.
type List []h.Secret

// Sum's constraint is internal: found.
type Sum[T h.Number] struct{ Total T }

// Kept is re-exported by an alias, so mentioning it is fine: not found.
type Kept = h.Kept

func Keep(k h.Kept) Kept { return k }

var _ = secret.New
