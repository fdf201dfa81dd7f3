package face

import h "example.com/exposed/internal/hidden"

// Tests are not the package's API: not found.
func Fixture() h.Secret { return h.Secret{} }
