// Package termsafe shows text that a sandbox, an agent, a package registry
// or a service chose (hit summaries, file names from a repository copy, an
// agent's words, a version string) on a terminal or in a text report
// without letting it act on the terminal or disguise itself.
//
// Such text may hold escape sequences (ESC [ 2 J clears the screen, ESC ] 0
// ; title BEL retitles the window, OSC 52 writes the clipboard), a CR or BS
// that overwrites what came before on the line ("PASS\rFAIL"), C1 controls
// that some terminals read as CSI, bidi controls that reorder what is shown
// ("report\u202etxt.exe" looks like "reportexe.txt"), invisible characters
// that make two different names look the same, and bytes that are not
// UTF-8. Every one of them is shown as a visible escape instead:
//
//   - below U+0020 (C0, NUL and ESC among them): \xHH, with \t \n \r by name;
//   - U+007F and above: \uHHHH (a character above U+FFFF as its UTF-16
//     surrogate pair, so the escape of a character inside a JSON string is
//     still valid JSON meaning the same string);
//   - a byte that is not part of valid UTF-8: \xHH.
//
// What is escaped (Hidden): every Unicode control (Cc: C0, DEL, C1), every
// format character (Cf: the bidi embeddings, overrides, isolates and marks
// U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C; zero-width space,
// joiners, word joiner, soft hyphen, BOM, the invisible operators, tag
// characters), the line and paragraph separators (Zl, Zp), variation
// selectors, the other default-ignorable code points (Hangul fillers,
// U+034F, U+115F, U+180B–U+180F, ...) and noncharacters. Letters, marks,
// symbols and spaces are left alone: a homoglyph ("а" for "a") still reads
// as a letter, which is what it is.
//
// A backslash is not escaped: the escapes are for safety, not to be parsed
// back, so a name holding the text "\x1b" prints as that text.
package termsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// hiddenTables are the classes shown escaped; see the package comment.
var hiddenTables = []*unicode.RangeTable{
	unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp,
	unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point,
	unicode.Noncharacter_Code_Point,
}

// Hidden reports whether r is shown as an escape: it could act on a
// terminal, reorder or hide text.
func Hidden(r rune) bool {
	if r < 0x20 || r == 0x7f {
		return true
	}
	if r < 0x80 {
		return false
	}
	return unicode.IsOneOf(hiddenTables, r)
}

// Escape returns s with every hidden character and every byte of invalid
// UTF-8 shown as a visible escape, newlines and tabs included: the result
// is one line of inert text. Text with nothing to escape is returned as is.
func Escape(s string) string { return escape(s, false) }

// Lines is Escape that keeps newlines and tabs: for text the harness lays
// out itself (a table, a multi-line finding), never for a value that must
// stay on its line.
func Lines(s string) string { return escape(s, true) }

// Truncate cuts s to at most n bytes at a character boundary, ending it
// with "…" when it cut, so a cut never leaves bytes that are not UTF-8.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	cut := max(n-len(ell), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ell
}

func escape(s string, layout bool) string {
	if clean(s, layout) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case layout && (r == '\n' || r == '\t'):
			b.WriteByte(byte(r))
		case Hidden(r):
			writeEscape(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean reports whether s has nothing to escape (the common case: no copy).
func clean(s string, layout bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 || c == 0x7f) && !(layout && (c == '\n' || c == '\t')) {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || Hidden(r) {
			return false
		}
		i += n
	}
	return true
}

func writeEscape(b *strings.Builder, r rune) {
	switch {
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r == '\t':
		b.WriteString(`\t`)
	case r < 0x20:
		fmt.Fprintf(b, `\x%02x`, r)
	case r > 0xffff:
		r1, r2 := utf16.EncodeRune(r)
		fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
	default:
		fmt.Fprintf(b, `\u%04x`, r)
	}
}
