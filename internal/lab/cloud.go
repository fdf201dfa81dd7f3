package lab

import (
	"net/http"
	"strings"
)

// gcp is the GCP metadata server: without "Metadata-Flavor: Google" it
// refuses (403), as the real one does to stop SSRF through plain clients.
func gcp(c Canaries, r *http.Request) reply {
	const ep = "metadata-gcp"
	if r.Header.Get("Metadata-Flavor") != "Google" || r.Header.Get("X-Forwarded-For") != "" {
		rep := text(ep, http.StatusForbidden, "Missing Metadata-Flavor:Google header.\n", false)
		rep.note = "no flavor header"
		return rep
	}
	var rep reply
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "/computeMetadata/v1":
		rep = text(ep, http.StatusOK, "instance/\nproject/\n", true)
	case "/computeMetadata/v1/project/project-id":
		rep = text(ep, http.StatusOK, "gatehouse-canary", true)
	case "/computeMetadata/v1/instance/hostname":
		rep = text(ep, http.StatusOK, "gatehouse-lab.internal", true)
	case "/computeMetadata/v1/instance/service-accounts":
		rep = text(ep, http.StatusOK, "default/\n", true)
	case "/computeMetadata/v1/instance/service-accounts/default/email":
		rep = text(ep, http.StatusOK, "canary@gatehouse-canary.invalid", true)
	case "/computeMetadata/v1/instance/service-accounts/default/token":
		rep = jsonReply(ep, map[string]any{"access_token": c.GCPAccessToken, "expires_in": 3599, "token_type": "Bearer"})
	default:
		rep = text(ep, http.StatusNotFound, "", false)
	}
	rep.header = http.Header{"Metadata-Flavor": {"Google"}}
	return rep
}

// azure is the Azure instance metadata service: without "Metadata: true"
// it answers 400, as the real one does.
func azure(c Canaries, r *http.Request) reply {
	const ep = "metadata-azure"
	if r.Header.Get("Metadata") != "true" || r.Header.Get("X-Forwarded-For") != "" {
		rep := reply{endpoint: ep, status: http.StatusBadRequest, ctype: "application/json",
			body: `{"error":"Bad request. Required metadata header not specified"}`}
		rep.note = "no metadata header"
		return rep
	}
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "/metadata/instance":
		return jsonReply(ep, map[string]any{"compute": map[string]string{
			"name": "gatehouse-lab", "subscriptionId": "00000000-0000-0000-0000-000000000000",
			"resourceGroupName": "gatehouse-canary", "vmId": "ghcanary",
		}})
	case "/metadata/identity/oauth2/token":
		return jsonReply(ep, map[string]string{
			"access_token": c.AzureAccessToken, "token_type": "Bearer", "expires_in": "3599",
			"resource": r.URL.Query().Get("resource"),
		})
	}
	return text(ep, http.StatusNotFound, "", false)
}

// alibaba is an Alibaba Cloud style metadata service at 100.100.100.200.
func alibaba(c Canaries, r *http.Request) reply {
	const ep = "metadata-other"
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "/latest/meta-data":
		return text(ep, http.StatusOK, "instance-id\nram/\n", true)
	case "/latest/meta-data/instance-id":
		return text(ep, http.StatusOK, "i-ghcanary", true)
	case "/latest/meta-data/ram/security-credentials":
		return text(ep, http.StatusOK, awsRole, true)
	case "/latest/meta-data/ram/security-credentials/" + awsRole:
		return jsonReply(ep, map[string]string{"Code": "Success",
			"AccessKeyId": c.AlibabaAccessKey, "AccessKeySecret": c.AlibabaSecret, "SecurityToken": c.AWSSessionToken})
	}
	return text(ep, http.StatusNotFound, "", false)
}

// wireServer stands in for Azure's WireServer: it answers the version
// query and a goal state carrying a canary, and records everything.
func wireServer(c Canaries, r *http.Request) reply {
	const ep = "wireserver"
	rep := text(ep, http.StatusNotFound, "", false)
	switch r.URL.Query().Get("comp") {
	case "versions":
		rep = text(ep, http.StatusOK, `<?xml version="1.0" encoding="utf-8"?><Versions><Preferred><Version>2015-04-05</Version></Preferred></Versions>`, true)
	case "goalstate":
		rep = text(ep, http.StatusOK, `<?xml version="1.0" encoding="utf-8"?><GoalState><Incarnation>1</Incarnation><Secret>`+c.WireServerSecret+`</Secret></GoalState>`, true)
	}
	rep.ctype = "text/xml"
	return rep
}
