package lab

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSets(t *testing.T) {
	js := []byte(`{"nftables": [{"metainfo": {"version": "1.0.6"}},
	 {"set": {"name": "emitted4", "elem": [{"elem": {"val": {"concat": ["203.0.113.10", "tcp", 80]}, "counter": {"packets": 2, "bytes": 120}}}]}},
	 {"set": {"name": "echo6", "elem": [{"elem": {"val": "3ffe::10", "counter": {"packets": 1}}}]}},
	 {"set": {"name": "flows4", "elem": [{"concat": ["198.51.100.6", "203.0.113.100", "udp", 53]}]}},
	 {"counter": {"name": "callback4", "packets": 3}}]}`)
	got, err := parseSets(js, "emitted4", "echo6", "flows4")
	require.NoError(t, err)
	require.Len(t, got, 3)
	f, ok := got[0].flow(0)
	require.True(t, ok)
	require.Equal(t, Flow{Addr: netip.MustParseAddr("203.0.113.10"), Proto: "tcp", Port: 80}, f)
	require.EqualValues(t, 2, got[0].packets)
	f, ok = got[1].flow(0)
	require.True(t, ok)
	require.Equal(t, Flow{Addr: netip.MustParseAddr("3ffe::10"), Proto: "icmp"}, f)
	f, ok = got[2].flow(1)
	require.True(t, ok)
	require.Equal(t, "udp 203.0.113.100:53", f.String())

	_, err = parseSets(js, "emitted4", "emitted6")
	require.ErrorContains(t, err, "set emitted6 is missing", "a set root in the guest removed is an error, never an empty record")
	_, err = parseSets([]byte(`{"nftables": [{"set": {"name": "x", "elem": [{"elem": {"val": [1]}}]}}]}`), "x")
	require.Error(t, err)
	_, err = parseSets([]byte(`not json`), "x")
	require.Error(t, err)
	for _, bad := range []setElem{
		{key: []any{"203.0.113.10", "sctp", 80.0}},
		{key: []any{"203.0.113.10", "tcp", 70000.0}},
		{key: []any{"nonsense", "tcp", 80.0}},
		{key: []any{"203.0.113.10", "tcp"}},
	} {
		_, ok := bad.flow(0)
		require.False(t, ok, "%v", bad.key)
	}
}

func TestSynSent(t *testing.T) {
	tcp := []byte(`  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0600A8C6:9C40 0A7100CB:2328 02 00000001:00000000 01:00000175 00000000     0        0 1 1
   1: 0600A8C6:9C41 0A7100CB:0050 01 00000000:00000000 00:00000000 00000000     0        0 2 1
   2: 0600A8C6:9C42 0A7100CB:2328 02 00000001:00000000 01:00000175 00000000     0        0 3 1
`)
	tcp6 := []byte(`  sl  local_address                         remote_address                        st
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A
   1: 000000000000000000000000010000FE:9C40 B80D0120000000000000000010000000:0050 02
`)
	m := map[Flow]int{}
	require.NoError(t, synSent(tcp, m))
	require.NoError(t, synSent(tcp6, m))
	require.Equal(t, map[Flow]int{
		{Addr: netip.MustParseAddr("203.0.113.10"), Proto: "tcp", Port: 9000}: 2,
		{Addr: netip.MustParseAddr("2001:db8::10"), Proto: "tcp", Port: 80}:   1,
	}, m)
	require.Error(t, synSent([]byte("head\n 0: 1:2 zz:0050 02\n"), map[Flow]int{}))
}

func TestDevNames(t *testing.T) {
	dev := []byte(`Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
gh1as3p:    1234      10    0    0    0     0          0         0      456       5    0    0    0     0       0          0
`)
	require.Equal(t, []string{"lo", "gh1as3p"}, devNames(dev))
}
