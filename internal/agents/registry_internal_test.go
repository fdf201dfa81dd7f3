package agents

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeRegistry serves version documents and tarballs the way the npm
// registry does (GET /<name>/<version>, tarball URL in dist.tarball), on
// loopback, and counts requests.
type fakeRegistry struct {
	*httptest.Server
	docs  map[string]map[string]any // "<name>/<version>" -> document
	tgz   map[string][]byte         // URL path -> tarball
	hits  atomic.Int32
	fault func(doc map[string]any) // alters each document served, if set
	// redirect answers a path with a redirect to another URL.
	redirect map[string]string
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	r := &fakeRegistry{docs: map[string]map[string]any{}, tgz: map[string][]byte{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		if loc, ok := r.redirect[req.URL.Path]; ok {
			http.Redirect(w, req, loc, http.StatusFound)
			return
		}
		if b, ok := r.tgz[req.URL.Path]; ok {
			w.Write(b)
			return
		}
		doc, ok := r.docs[strings.TrimPrefix(req.URL.Path, "/")]
		if !ok {
			http.NotFound(w, req)
			return
		}
		if r.fault != nil {
			doc = cloneDoc(doc)
			r.fault(doc)
		}
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(r.Close)
	return r
}

// add publishes name@version with files (path -> content; a trailing "*"
// on the path marks it executable) and optionalDependencies.
func (r *fakeRegistry) add(t *testing.T, name, version string, files map[string]string, optional map[string]string) {
	t.Helper()
	r.publish(name, version, tarball(t, files), optional)
}

// publish puts name@version on r with a tarball made elsewhere.
func (r *fakeRegistry) publish(name, version string, tgz []byte, optional map[string]string) {
	sum := sha512.Sum512(tgz)
	path := "/" + name + "/-/" + name[strings.LastIndex(name, "/")+1:] + "-" + version + ".tgz"
	r.tgz[path] = tgz
	r.docs[name+"/"+version] = map[string]any{
		"name": name, "version": version, "optionalDependencies": optional,
		"dist": map[string]any{"tarball": r.URL + path, "integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:])},
	}
}

// lock pins everything r serves now, as `gatehouse agents lock` would.
func (r *fakeRegistry) lock() *Lock {
	l := &Lock{Schema: lockSchema, Packages: map[string]Locked{}}
	for _, doc := range r.docs {
		e := Locked{Integrity: doc["dist"].(map[string]any)["integrity"].(string)}
		if opt, ok := doc["optionalDependencies"].(map[string]string); ok && len(opt) > 0 {
			e.Optional = opt
		}
		l.Packages[doc["name"].(string)+"@"+doc["version"].(string)] = e
	}
	return l
}

func tarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		mode := int64(0o644)
		if n, ok := strings.CutSuffix(name, "*"); ok {
			name, mode = n, 0o755
		}
		if strings.HasPrefix(name, "->") { // "->link:target": a symlink
			link, target, _ := strings.Cut(strings.TrimPrefix(name, "->"), ":")
			tw.WriteHeader(&tar.Header{Name: "package/" + link, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777})
			continue
		}
		prefix := "package/"
		if strings.HasPrefix(name, "/") || strings.HasPrefix(name, "..") {
			prefix = ""
		}
		if err := tw.WriteHeader(&tar.Header{Name: prefix + name, Mode: mode, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(content))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func cloneDoc(doc map[string]any) map[string]any {
	b, _ := json.Marshal(doc)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// publishCodex puts a fake Codex of the pinned version on r, shaped like
// the real one: a wrapper whose optionalDependencies alias the platform
// package that carries the binary.
func publishCodex(t *testing.T, r *fakeRegistry, binary string) Adapter {
	a := codex()
	plat := a.agent.platform
	r.add(t, a.Package, a.Version, map[string]string{"bin/codex.js*": "// wrapper"},
		map[string]string{plat: "npm:" + a.Package + "@" + a.Version + "-" + platformSuffix()})
	r.add(t, a.Package, a.Version+"-"+platformSuffix(), map[string]string{a.agent.file + "*": binary, "vendor/README": "x"}, nil)
	return a
}
