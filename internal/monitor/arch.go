package monitor

import (
	"fmt"
	"runtime"
)

// abi is what the program needs of the machine: the syscall numbers it
// watches and where struct pt_regs keeps the first six syscall arguments.
// Numbers are the native ABI's; 32-bit compat calls (int 0x80) are not seen.
type abi struct {
	connect, sendto, sendmsg, write, close int32
	open                                   int32 // -1 where the ABI has no open(2)
	openat, openat2, execve, execveat      int32
	arg                                    [6]int16 // offsets in struct pt_regs
}

func nativeABI() (abi, error) {
	switch runtime.GOARCH {
	case "amd64":
		return abi{
			connect: 42, sendto: 44, sendmsg: 46, write: 1, close: 3,
			open: 2, openat: 257, openat2: 437, execve: 59, execveat: 322,
			// di, si, dx, r10, r8, r9 (the syscall convention, r10 for rcx)
			arg: [6]int16{112, 104, 96, 56, 72, 64},
		}, nil
	case "arm64":
		return abi{
			connect: 203, sendto: 206, sendmsg: 211, write: 64, close: 57,
			open: -1, openat: 56, openat2: 437, execve: 221, execveat: 281,
			arg: [6]int16{0, 8, 16, 24, 32, 40}, // regs[0..5]
		}, nil
	}
	return abi{}, fmt.Errorf("%w: no syscall table for %s", ErrUnsupported, runtime.GOARCH)
}
