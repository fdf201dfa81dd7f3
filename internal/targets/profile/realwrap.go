package profile

// SRT is the srt section: the settings JSON next to the profile.
type SRT struct {
	Settings string `yaml:"settings"`
}

// Codex is the codex section: the Codex config.toml next to the profile and
// the permissions profile in it that `codex sandbox -P` applies.
type Codex struct {
	Config  string `yaml:"config"`
	Profile string `yaml:"profile"`
}
