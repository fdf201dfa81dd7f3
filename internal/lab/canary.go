package lab

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/internal/minted"
)

// CanaryPrefix starts every fake credential the lab hands out, so that no
// one mistakes one for a real key and a leak is easy to find in any output.
const CanaryPrefix = "GHCANARY"

// Canaries are the fake credentials of one lab, random per lab so that a
// value seen anywhere can be traced back to this run.
type Canaries struct {
	AWSAccessKeyID     string `json:"aws_access_key_id"`
	AWSSecretAccessKey string `json:"aws_secret_access_key"`
	AWSSessionToken    string `json:"aws_session_token"`
	GCPAccessToken     string `json:"gcp_access_token"`
	AzureAccessToken   string `json:"azure_access_token"`
	AlibabaAccessKey   string `json:"alibaba_access_key_id"`
	AlibabaSecret      string `json:"alibaba_access_key_secret"`
	WireServerSecret   string `json:"wireserver_secret"`
}

// All lists every canary value, for scanning outputs for leaks.
func (c Canaries) All() []string {
	return []string{c.AWSAccessKeyID, c.AWSSecretAccessKey, c.AWSSessionToken, c.GCPAccessToken,
		c.AzureAccessToken, c.AlibabaAccessKey, c.AlibabaSecret, c.WireServerSecret}
}

func newCanaries() (Canaries, error) {
	var err error
	mk := func(kind string, n int) string {
		v, merr := minted.New(minted.Canary, CanaryPrefix+"-"+kind+"-", n)
		if merr != nil && err == nil {
			err = fmt.Errorf("canary: %w", merr)
		}
		return v
	}
	c := Canaries{
		AWSAccessKeyID:     mk("AWSKEY", 8),
		AWSSecretAccessKey: mk("awssecret", 20),
		AWSSessionToken:    mk("awstoken", 32),
		GCPAccessToken:     mk("gcptoken", 32),
		AzureAccessToken:   mk("azuretoken", 32),
		AlibabaAccessKey:   mk("ALIKEY", 8),
		AlibabaSecret:      mk("alisecret", 20),
		WireServerSecret:   mk("wireserver", 16),
	}
	return c, err
}

// randomToken returns a fresh IMDSv2-style session token.
func randomToken() (string, error) {
	return minted.New(minted.Canary, CanaryPrefix+"-imdsv2-", 24)
}
