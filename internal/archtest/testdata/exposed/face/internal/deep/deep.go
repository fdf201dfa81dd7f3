// Package deep is internal to face, which is as unreachable from outside.
package deep

type Token string
