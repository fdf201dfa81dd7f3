package lab

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPending(t *testing.T) {
	session := netip.MustParseAddr("198.51.100.6")
	mine := func(a netip.Addr) bool { return a == session }
	const head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for _, tc := range []struct {
		name, table string
		tcp         bool
		want        string
	}{
		{"idle", head + "   0: 0A7100CB:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1\n" +
			"   1: 0A7100CB:0050 066433C6:9C40 01 00000000:00000000 00:00000000 00000000 0 0 2\n", true, ""},
		{"backlog", head + "   0: 0A7100CB:0050 00000000:0000 0A 00000000:00000002 00:00000000 00000000 0 0 1\n", true, "2 connection(s) waiting"},
		{"unread from the session", head + "   1: 0A7100CB:0050 066433C6:9C40 01 00000000:00000010 00:00000000 00000000 0 0 2\n", true, "16 bytes from 198.51.100.6"},
		{"unread from another", head + "   1: 0A7100CB:0050 076433C6:9C40 01 00000000:00000010 00:00000000 00000000 0 0 2\n", true, ""},
		{"half open", head + "   1: 0A7100CB:0050 066433C6:9C40 03 00000000:00000000 00:00000000 00000000 0 0 2\n", true, "half open"},
		{"datagram queued", head + "   0: 0A7100CB:2329 00000000:0000 07 00000000:00000040 00:00000000 00000000 0 0 1\n", false, "64 bytes waiting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pending([]byte(tc.table), tc.tcp, mine)
			require.NoError(t, err)
			if tc.want == "" {
				require.Empty(t, got)
			} else {
				require.Contains(t, got, tc.want)
			}
		})
	}
	_, err := pending([]byte(head+"   0: 0A7100CB:2329 00000000:0000 07 nonsense 0 0\n"), false, mine)
	require.Error(t, err)
}
