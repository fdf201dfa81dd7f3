package profile

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Section is a top-level profile field that only some kinds read ("docker",
// "workspace"). Its type belongs to the kind's own package: profile decodes
// it (strictly, with the rest of the file) without knowing what is in it.
type Section struct {
	// Name is the section's YAML key.
	Name string
	// Zero is a zero value of the section's type: what the key decodes
	// into. Kinds that read the same section declare the same type.
	Zero any
	// Elsewhere, when set, is the refusal of the section in a profile of
	// a kind that does not read it (owners: the kinds that do); nil means
	// "only for target <owners> (target is <target>)".
	Elsewhere func(owners []string, target string) error
}

// Empty is a section type that says itself when it holds nothing; for
// other types it is the zero value that does.
type Empty interface{ Empty() bool }

var sectionsMu sync.Mutex

// SectionOf is p's section name, decoded as type T (the type of the
// Section.Zero its kind declared). A profile not made by Load (a literal
// in a test) has no sections: it gets a new zero value, which p keeps.
func SectionOf[T any](p *Profile, name string) *T {
	// A loaded profile's map is only read here; a literal's is filled on
	// first use, maybe by sessions started at once: one lock for both.
	sectionsMu.Lock()
	defer sectionsMu.Unlock()
	if s, ok := p.sections[name].(*T); ok {
		return s
	}
	s := new(T)
	if p.sections == nil {
		p.sections = map[string]any{}
	}
	p.sections[name] = s
	return s
}

// set reports whether a decoded section (a pointer to it) holds anything.
func set(s any) bool {
	if e, ok := s.(Empty); ok {
		return !e.Empty()
	}
	v := reflect.ValueOf(s)
	return v.Kind() == reflect.Pointer && !v.IsNil() && !v.Elem().IsZero()
}

// sectionTypes are the sections of ks, each name once, in the order the
// kinds declare them; kinds that give one name two types are refused.
func (ks Kinds) sectionTypes() ([]Section, error) {
	var out []Section
	seen := map[string]int{}
	for _, k := range ks {
		for _, s := range k.Sections() {
			i, ok := seen[s.Name]
			if !ok {
				seen[s.Name] = len(out)
				out = append(out, s)
				continue
			}
			if reflect.TypeOf(out[i].Zero) != reflect.TypeOf(s.Zero) {
				return nil, fmt.Errorf("kinds declare section %s as %T and %T", s.Name, out[i].Zero, s.Zero)
			}
		}
	}
	return out, nil
}

// document is the Go type one profile file decodes into: Profile's own
// fields and one field per section of the kinds, so that a section is
// decoded as strictly as the rest, its errors in the file's order. Rest
// takes the top-level keys that are neither (unknown, or a section of no
// kind Load was given).
func document(secs []Section) reflect.Type {
	fields := []reflect.StructField{
		{Name: "Profile", Type: reflect.TypeOf(Profile{}), Tag: `yaml:",inline"`},
		{Name: "Rest", Type: reflect.TypeOf(map[string]yaml.Node(nil)), Tag: `yaml:",inline"`},
	}
	for i, s := range secs {
		fields = append(fields, reflect.StructField{
			Name: fmt.Sprintf("S%d", i),
			Type: reflect.TypeOf(s.Zero),
			Tag:  reflect.StructTag(fmt.Sprintf("yaml:%q", s.Name)),
		})
	}
	return reflect.StructOf(fields)
}

// firstUnknown is the first top-level key of data that no field of doc
// (a decoded document value) took, and its line; "" when there is none.
func firstUnknown(doc reflect.Value, data []byte) (string, int) {
	rest := doc.Field(1).Interface().(map[string]yaml.Node)
	if len(rest) == 0 {
		return "", 0
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return "", 0
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if _, ok := rest[m.Content[i].Value]; ok {
			return m.Content[i].Value, m.Content[i].Line
		}
	}
	return "", 0
}

// ownersText names the kinds that read section, for a refusal.
func ownersText(owners []string) string { return strings.Join(owners, " or ") }
