package docker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

func hostRelease(t *testing.T) string {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	return unix.ByteSliceToString(u.Release[:])
}

// containersNamed counts containers on the lab daemon with this id.
func containersNamed(t *testing.T, id string) int {
	t.Helper()
	cli, err := client.New(client.WithHost(labDaemon.Host()), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range list.Items {
		if c.ID == id {
			n++
		}
	}
	return n
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
