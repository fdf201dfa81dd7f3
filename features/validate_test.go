package features_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gatehouse-dev/gatehouse/features"
)

func TestEmbeddedGates(t *testing.T) {
	gates, err := features.Gates(features.FS)
	if err != nil {
		t.Fatal(err)
	}
	got := "," + strings.Join(gates, ",") + ","
	for _, want := range []string{"cloud-metadata", "dns-exfiltration", "external-callback"} {
		if !strings.Contains(got, ","+want+",") {
			t.Errorf("gates %s lack %s", got, want)
		}
	}
}

func TestMalformedFeaturesAreRefused(t *testing.T) {
	tests := map[string]string{
		"not gherkin":  "this is not a feature\n  at all:\n",
		"no gate tag":  "Feature: x\n  Scenario: y\n    Given z\n",
		"bad indented": "@g\nFeature: x\n  Scenario Outline: y\n    Given <a>\n    Examples:\n      | a |\n      | 1 \n",
	}
	for name, src := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := features.Gates(fstest.MapFS{"bad.feature": {Data: []byte(src)}})
			if err == nil || !strings.Contains(err.Error(), "bad.feature") {
				t.Fatalf("error %v does not name the file", err)
			}
		})
	}
	if _, err := features.Gates(fstest.MapFS{}); err == nil {
		t.Error("an empty folder was accepted")
	}
}
