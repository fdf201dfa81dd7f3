package main

import "flag"

// shorts are the one-letter aliases the tools next to us use (cosign,
// docker, kubectl): wherever a verb has the long flag, the short one is
// the same flag, listed by --help as "short for --NAME". Go's flag package
// takes -o json, --o json and -o=json; it does not bundle (-qv) or glue
// values (-ojson).
var shorts = []struct{ short, long string }{
	{"o", "output"},
	{"p", "profile"},
	{"k", "key"},
}

// shortFlags adds the aliases of fl's flags; call it once every flag is
// registered, before Parse.
func shortFlags(fl *flag.FlagSet) {
	for _, s := range shorts {
		f := fl.Lookup(s.long)
		if f == nil || fl.Lookup(s.short) != nil {
			continue
		}
		fl.Var(f.Value, s.short, "short for --"+s.long)
	}
}
