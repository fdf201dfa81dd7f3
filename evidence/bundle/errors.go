package bundle

import (
	"errors"
	"fmt"
)

// Kinds of verification failure. Test with errors.Is(err, bundle.ErrDigest);
// errors.As(err, *(*Error)) gives the file and field.
var (
	ErrPartial     = errors.New("partial run folder")
	ErrIncomplete  = errors.New("run is not complete")
	ErrUnsigned    = errors.New("bundle is not signed")
	ErrMalformed   = errors.New("malformed file")
	ErrSignature   = errors.New("signature does not verify")
	ErrStatement   = errors.New("statement does not match the bundle")
	ErrDigest      = errors.New("digest mismatch")
	ErrMissingFile = errors.New("file listed but missing")
	ErrExtraFile   = errors.New("file not covered by the signature")
	ErrUnsafePath  = errors.New("unsafe path")
	ErrTooLarge    = errors.New("too large")
	ErrSealed      = errors.New("already sealed")
)

// Error names what is wrong and where.
type Error struct {
	Kind  error  // one of the Err* values above
	File  string // path relative to the bundle root, "" for the folder
	Field string // e.g. "complete", "subject", "predicateType"; may be ""
	Err   error  // underlying cause, may be nil
}

func (e *Error) Error() string {
	s := "bundle: " + e.Kind.Error()
	if e.File != "" {
		s += ": " + e.File
	}
	if e.Field != "" {
		s += ": field " + e.Field
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrDigest) match on the kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

func (e *Error) Unwrap() error { return e.Err }

func fail(kind error, file, field string, cause error) error {
	return &Error{Kind: kind, File: file, Field: field, Err: cause}
}

func failf(kind error, file, field, format string, args ...any) error {
	return &Error{Kind: kind, File: file, Field: field, Err: fmt.Errorf(format, args...)}
}
