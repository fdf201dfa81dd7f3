package creds

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Every value below is made up for this test, assembled from pieces so
// that no secret scanner mistakes the file for a leak. They have the
// shapes providers issue; none was ever issued.
var (
	fakeAWSID     = "AKIA" + "GHFAKE" + "0123456789"
	fakeAWSSecret = "wJalrXUtnFEMI" + "K7MDENGbPxRfiCY" + "GHFAKE012345"
	fakeGitHub    = "ghp_" + "GhFake0123456789" + "abcdefghijABCDEFGHIJ"
	fakeOpenAI    = "sk-proj-" + "GhFake0123456789" + "abcdefghijABCDEFGHIJklmnop"
	fakeAnthropic = "sk-ant-api03-" + "GhFake0123456789" + "abcdefghijABCDEFGHIJ"
	fakeSlack     = "xoxb-" + "123456789012-" + "GhFake0123456789"
	fakeGoogle    = "AIza" + "SyGhFake0123456789" + "abcdefghijABCDEFG"
	fakeJWT       = "eyJhbGciOiJSUzI1NiJ9" + ".eyJzdWIiOiJnaGZha2UifQ" + ".GhFake0123456789abcdef"
	fakeRandom    = "q7Rk2" + "Xv9LmP4sT8wZ" + "c3Nd6Hj1"
	fakePEM       = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "b3BlbnNzaC1rZXktdjEGHFAKE" + "\n-----END OPENSSH PRIVATE KEY-----"
)

func TestCredsInTextFindsRealShapes(t *testing.T) {
	tests := []struct {
		name, text, where, typ, value string
	}{
		{"aws key id", "aws_access_key_id = " + fakeAWSID + "\n", "/h/.aws/credentials", "aws-access-key-id", fakeAWSID},
		{"aws secret", "[default]\naws_secret_access_key = " + fakeAWSSecret + "\n", "/h/.aws/credentials", "aws-secret-access-key", fakeAWSSecret},
		{"github", "github.com:\n    oauth_token: " + fakeGitHub + "\n", "/h/.config/gh/hosts.yml", "github-token", fakeGitHub},
		{"openai", "OPENAI_API_KEY=" + fakeOpenAI, "/h/.env", "openai-key", fakeOpenAI},
		{"anthropic is not openai", "key: " + fakeAnthropic, "/h/x", "anthropic-key", fakeAnthropic},
		{"slack", "token " + fakeSlack, "/h/x", "slack-token", fakeSlack},
		{"google", "key=" + fakeGoogle, "/h/x", "google-api-key", fakeGoogle},
		{"jwt bearer", "Authorization: Bearer " + fakeJWT, "/h/x", "jwt", fakeJWT},
		{"pem", fakePEM + "\n", "/h/.ssh/id_ed25519", "private-key", fakePEM},
		{"git credentials", "https://agent:" + fakeRandom + "@git.example.test\n", "/h/.git-credentials", "url-password", fakeRandom},
		{"netrc", "machine git.example.test login agent password hunter22\n", "/h/.netrc", "netrc-password", "hunter22"},
		{"json password", `{"db": {"password": "` + fakeRandom + `"}}`, "/h/app.json", "named-secret", fakeRandom},
		{"docker auth", `{"auths":{"r.test":{"auth":"` + fakeRandom + `"}}}`, "/h/.docker/config.json", "named-secret", fakeRandom},
		{"mounted secret file", fakeRandom[:12] + "\n", "/run/secrets/db-password", "secret-file", fakeRandom[:12]},
		{"service-account token", fakeRandom, "/var/run/secrets/kubernetes.io/serviceaccount/token", "secret-file", fakeRandom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := InFile([]byte(tt.text), tt.where)
			if len(got) != 1 {
				t.Fatalf("found %d credentials, want 1: %+v", len(got), got)
			}
			want := Cred{Type: tt.typ, SHA256: wire.CredHash(tt.value), Where: tt.where}
			if got[0] != want {
				t.Errorf("got %+v, want %+v", got[0], want)
			}
		})
	}
}

// What must not be reported: values that are not credentials, and the
// harness's own canaries (reported in clear as canaries instead).
func TestCredsInTextIgnoresLookAlikes(t *testing.T) {
	tests := []struct{ name, text, where string }{
		{"a canary in a credential file", "aws_secret_access_key = GHCANARY-home-aws-0011223344\n", "/h/.aws/credentials"},
		{"a canary private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nGHCANARY-home-ssh-00\n-----END OPENSSH PRIVATE KEY-----\n", "/h/.ssh/id_ed25519"},
		{"the harness's fake key id", "aws_access_key_id = AKIAGATEHOUSE\n", "/h/.aws/credentials"},
		{"a public key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhfake0123456789 agent@box\n", "/h/.ssh/id_ed25519.pub"},
		{"a certificate", "-----BEGIN CERTIFICATE-----\nMIIBfake0123\n-----END CERTIFICATE-----\n", "/etc/ssl/c.pem"},
		{"a path in a key variable", "SSH_KEY=/home/agent/.ssh/id_ed25519_long_name\n", "/h/.env"},
		{"a placeholder", "API_KEY=changeme-changeme-changeme\n", "/h/.env"},
		{"a low-entropy value", "password = aaaaaaaaaaaaaaaaaaaaaaaa\n", "/h/app.ini"},
		{"prose", "The password must be at least sixteen characters long.\n", "/h/README"},
		{"a word starting with sk-", "task-runner-with-a-rather-long-name-for-testing\n", "/h/x"},
		{"a url without a password", "https://git.example.test/agent/repo.git\n", "/h/.git/config"},
		{"a multi-line file in a secrets folder", "line one\nline two\n", "/run/secrets/readme"},
		{"a named public key", `{"auth_public_key": "5dW/KFceiSD6WhgflujloBzHAvhLQSEUq4hCT1u+4bI="}`, "/container_info.json"},
		{"a pubkey variable", "SIGNING_PUBKEY=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg\n", "/h/.env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := InFile([]byte(tt.text), tt.where); len(got) != 0 {
				t.Errorf("reported %+v", got)
			}
		})
	}
}

func TestCredsInEnv(t *testing.T) {
	env := []string{
		"HOME=/home/agent", "PATH=/usr/bin:/bin", "LANG=C.UTF-8",
		"OPENAI_API_KEY=" + fakeOpenAI,
		"DB_PASSWORD=" + fakeRandom,
		"GATEHOUSE_BROKER_TOKEN=ghbroker-00112233445566778899aabbccddeeff00112233",
		"SSH_AUTH_SOCK=/run/user/1000/ssh-agent.socket",
		"TOKENIZERS_PARALLELISM=false",
		"AWS_ACCESS_KEY_ID=" + fakeAWSID,
		"LEAKED=GHCANARY-env-aws-secret-0011",
		"GIT_ASKPASS=",
	}
	got := map[string]Cred{}
	for _, c := range InEnv(env, "env:") {
		got[c.Where] = c
	}
	want := map[string]string{
		"env:OPENAI_API_KEY":         "openai-key",
		"env:DB_PASSWORD":            "named-secret",
		"env:GATEHOUSE_BROKER_TOKEN": "named-secret",
		"env:AWS_ACCESS_KEY_ID":      "aws-access-key-id",
	}
	for where, typ := range want {
		if got[where].Type != typ {
			t.Errorf("%s: type %q, want %q", where, got[where].Type, typ)
		}
	}
	if len(got) != len(want) {
		t.Errorf("found %d, want %d: %+v", len(got), len(want), got)
	}
	for _, c := range got {
		if strings.Contains(c.Where, "=") || len(c.SHA256) != 64 {
			t.Errorf("a report must carry the name and a hash, never the value: %+v", c)
		}
	}
}

func TestWrapperSessionCredentials(t *testing.T) {
	tok := "srtRunToken0123456789abcdef"
	env := []string{
		"HTTP_PROXY=http://srt.Y29tbWFuZA:" + tok + "@localhost:3128",
		"GIT_SSH_COMMAND=ssh -o ProxyCommand='socat - PROXY:localhost:%h:%p,proxyport=3128,proxy-authorization=srt:" + tok + "'",
		"HTTPS_PROXY=http://corp:TeamLongLivedPass99@proxy.corp:3128", // handed in by the team's profile
		"OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
	}
	got := WrapperSession(env, map[string]bool{"http://corp:TeamLongLivedPass99@proxy.corp:3128": true})
	if got[wire.CredHash(tok)] == "" {
		t.Errorf("the wrapper's proxy password is not listed: %v", got)
	}
	if got[wire.CredHash("TeamLongLivedPass99")] != "" {
		t.Error("a password the team's profile handed in counted as the wrapper's own")
	}
	for h, what := range got {
		if what == "in OPENAI_API_KEY" || h == wire.CredHash("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD") {
			t.Errorf("an unrelated key counted as the wrapper's own")
		}
	}
	if len(WrapperSession([]string{"PATH=/bin"}, nil)) != 0 {
		t.Error("no proxy, yet session credentials")
	}
}
