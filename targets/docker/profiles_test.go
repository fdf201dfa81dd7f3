package docker_test

import (
	"bytes"
	"testing"

	"gopkg.in/yaml.v3"

	"gatehouse/targets/docker"
	"gatehouse/targets/profiles"
)

// TestShippedProfilesDecode: the docker section of each shipped docker or
// gvisor profile decodes into docker.Spec with no unknown field and passes
// Validate, so a typo cannot silently drop a hardening option.
func TestShippedProfilesDecode(t *testing.T) {
	want := map[string]func(docker.Spec) bool{
		"docker-hardened.yaml": func(s docker.Spec) bool { return s.ReadOnly && s.User == "1000:1000" && s.CapDrop[0] == "ALL" },
		"gvisor-hardened.yaml": func(s docker.Spec) bool { return s.ReadOnly && s.Runtime == "runsc" },
		"docker-leaky.yaml":    func(s docker.Spec) bool { return s.Privileged && s.PID == "host" && len(s.Mounts) == 3 },
	}
	for file, check := range want {
		t.Run(file, func(t *testing.T) {
			b, err := profiles.FS.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Docker yaml.Node `yaml:"docker"`
			}
			if err := yaml.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			out, err := yaml.Marshal(&doc.Docker)
			if err != nil {
				t.Fatal(err)
			}
			dec := yaml.NewDecoder(bytes.NewReader(out))
			dec.KnownFields(true)
			var s docker.Spec
			if err := dec.Decode(&s); err != nil {
				t.Fatalf("docker section: %v", err)
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			if !check(s) {
				t.Errorf("decoded spec lost options: %+v", s)
			}
		})
	}
}
