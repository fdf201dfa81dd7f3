package legacyip

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"2852039166", "169.254.169.254", true},
		{"0xa9fea9fe", "169.254.169.254", true},
		{"0251.0376.0251.0376", "169.254.169.254", true},
		{"0xa9.0xfe.0xa9.0xfe", "169.254.169.254", true},
		{"169.254.43518", "169.254.169.254", true},
		{"169.16689662", "169.254.169.254", true},
		{"127.1", "127.0.0.1", true},
		{"metadata.google.internal", "", false},
		{"256.1.1.1", "", false},
		{"1.2.3.4.5", "", false},
		{"4294967296", "", false},
		{"08", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := Parse(tt.in)
		if ok != tt.ok || (ok && got.String() != tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want %s, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
