package lab

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestDecodeKey(t *testing.T) {
	v4 := keyLayout{4, true}
	k := []byte{203, 0, 113, 10, unix.IPPROTO_TCP, 0, 0, 0, 0x23, 0x28, 0, 0}
	e, err := decodeKey(k, v4, false)
	require.NoError(t, err)
	require.Equal(t, Flow{Addr: netip.MustParseAddr("203.0.113.10"), Proto: "tcp", Port: 9000}, e.flow)
	withSrc := append([]byte{198, 51, 100, 6}, k...)
	withSrc[8] = unix.IPPROTO_UDP
	e, err = decodeKey(withSrc, v4, true)
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddr("198.51.100.6"), e.src)
	require.Equal(t, "udp 203.0.113.10:9000", e.flow.String())
	e, err = decodeKey(netip.MustParseAddr("3ffe::10").AsSlice(), keyLayout{16, false}, false)
	require.NoError(t, err)
	require.Equal(t, "icmp 3ffe::10", e.flow.String())
	mapped := netip.MustParseAddr("::ffff:169.254.169.254").AsSlice()
	e, err = decodeKey(append(mapped, unix.IPPROTO_TCP, 0, 0, 0, 0, 80, 0, 0), keyLayout{16, true}, false)
	require.NoError(t, err)
	require.Equal(t, "tcp 169.254.169.254:80", e.flow.String())
	_, err = decodeKey(k[:11], v4, false)
	require.Error(t, err, "a short key")
	bad := append([]byte(nil), k...)
	bad[4] = unix.IPPROTO_SCTP
	_, err = decodeKey(bad, v4, false)
	require.Error(t, err, "a protocol the rules never put there")
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
