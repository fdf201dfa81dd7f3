package monitor

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The record the program writes to the ring buffer, little-endian:
//
//	 0 u64 ktime_get_ns at the syscall's entry
//	 8 u64 cgroup v2 id of the calling task
//	16 u64 pid_tgid (tgid in the high half)
//	24 u32 syscall number; recExit for a task's exit, recAlive for the first
//	       syscall of a process of a stopped cgroup
//	28 u32 fd (connect/send/write), 0 otherwise; for recAlive the syscall
//	       number, for recExit 1 when the whole process died with this task
//	       (group_dead), 0 when not, 2 when the kernel does not say
//	32 u32 bytes of payload read (sends) or of the path with its NUL (open/exec)
//	36 u32 loginuid of the task (0 when the kernel's layout was not found)
//	40 [256] data: sockaddr in [0:32] and payload in [32:256] for the network
//	       calls; the path for open/exec; the task's comm for recExit/recAlive
const (
	recSize     = 296
	offKtime    = 0
	offCgroup   = 8
	offPidTgid  = 16
	offNr       = 24
	offFd       = 28
	offLen      = 32
	offLoginUID = 36
	offData     = 40
	sockaddrLen = 32
	payloadOff  = offData + sockaddrLen
	payloadMax  = recSize - payloadOff // 224
	pathMax     = recSize - offData    // 256
	commLen     = 16

	recExit  = 0xffffffff
	recAlive = 0xfffffffe
	immExit  = -1 // recExit as a 32-bit immediate
	immAlive = -2 // recAlive as a 32-bit immediate
)

// Why the kernel side lost a record: indexes of the per-CPU drops map.
const (
	dropRingFull   = iota // the ring buffer had no room
	dropAddrUnread        // connect/send: the sockaddr could not be read from user memory
	dropMsgUnread         // sendmsg: the msghdr could not be read from user memory
	nDropReasons
)

// Stack slots (offsets from r10, the frame pointer).
const (
	stArg     = -8   // scratch for one syscall argument
	stCgroup  = -16  // current cgroup id
	stPidTgid = -24  // current pid_tgid
	stFdKey   = -32  // tgid<<32 | fd: the key of the DNS-socket map
	stAddr    = -40  // user pointer to a sockaddr
	stAddrLen = -48  // its length
	stPayLen  = -56  // payload length
	stPay     = -64  // user pointer to the payload
	stValue   = -72  // spilled pointer to a DNS-socket map value
	stMsghdr  = -104 // struct msghdr head: name, namelen, iov, iovlen
	stIovec   = -120 // first struct iovec: base, len
	stZeroKey = -124 // u32 0, the key of the array maps
	stDropKey = -128 // u32 index into the drops map
	stStopAt  = -136 // ktime a registered cgroup was marked stopped at
	stAlive   = -152 // {cgroup id, tgid}: the key of the alive map
)

// programName is what `bpftool prog` (or ProgramGetNextID) shows: the gh_
// prefix lets a leftover check recognise ours.
const (
	programName     = "gh_sys_enter"
	exitProgramName = "gh_sched_exit"
)

// config is the single value of the config map.
//
//	0 u32 1: ship only registered cgroups; 0: every cgroup
//	4 u32 tgid whose activity is ignored (the monitor itself), 0 for none
//	8 u32 how many registered cgroups are marked stopped: while 0, syscalls
//	      the monitor does not watch leave at once
const configSize = 16

// maps the program reads and writes, created before the program is loaded.
type maps struct {
	events  *ebpf.Map // ringbuf of records
	config  *ebpf.Map // array[1] config (see configSize)
	cgroups *ebpf.Map // hash cgroup id → u64: the registered sessions; the ktime it was marked stopped at, 0 while running
	dnsfd   *ebpf.Map // LRU hash tgid<<32|fd → the sockaddr a socket was connected to on port 53
	drops   *ebpf.Map // per-CPU array[nDropReasons] u64: records lost, by reason
	alive   *ebpf.Map // LRU hash {cgroup id, tgid} → u8: processes already reported alive after their cgroup's stop
}

func (m maps) all() []*ebpf.Map {
	return []*ebpf.Map{m.events, m.config, m.cgroups, m.dnsfd, m.drops, m.alive}
}

// instructions assembles the sys_enter program. loginuidOff is the offset of
// task_struct.loginuid read from the kernel's BTF, 0 to leave the field out.
func instructions(a abi, m maps, loginuidOff uint32) asm.Instructions {
	var p asm.Instructions
	emit := func(ins ...asm.Instruction) { p = append(p, ins...) }
	label := func(name string, ins asm.Instruction) { p = append(p, ins.WithSymbol(name)) }

	// readArg loads syscall argument n (from the kernel's pt_regs) into dst.
	readArg := func(n int, dst asm.Register) {
		emit(
			asm.Mov.Reg(asm.R1, asm.RFP), asm.Add.Imm(asm.R1, stArg),
			asm.Mov.Imm(asm.R2, 8),
			asm.Mov.Reg(asm.R3, asm.R6), asm.Add.Imm(asm.R3, int32(a.arg[n])),
			asm.FnProbeReadKernel.Call(),
			asm.LoadMem(dst, asm.RFP, stArg, asm.DWord),
		)
	}
	// spillArg stores syscall argument n in a stack slot.
	spillArg := func(n int, slot int16) {
		readArg(n, asm.R1)
		emit(asm.StoreMem(asm.RFP, slot, asm.R1, asm.DWord))
	}
	// fdKey builds tgid<<32 | fd (argument 0) in stFdKey.
	fdKey := func() {
		readArg(0, asm.R2)
		emit(
			asm.LSh.Imm(asm.R2, 32), asm.RSh.Imm(asm.R2, 32),
			asm.LoadMem(asm.R1, asm.RFP, stPidTgid, asm.DWord),
			asm.RSh.Imm(asm.R1, 32), asm.LSh.Imm(asm.R1, 32),
			asm.Or.Reg(asm.R1, asm.R2),
			asm.StoreMem(asm.RFP, stFdKey, asm.R1, asm.DWord),
		)
	}
	reserve := func() { p = append(p, reserveRecord(m, loginuidOff)...) }
	// fdToRecord copies the fd (low half of stFdKey) into the record.
	fdToRecord := func() {
		emit(
			asm.LoadMem(asm.R1, asm.RFP, stFdKey, asm.Word),
			asm.StoreMem(asm.R8, offFd, asm.R1, asm.Word),
		)
	}
	// readSockaddr reads at most 28 bytes from stAddr into the record and
	// keeps only AF_INET and AF_INET6 (unix sockets are noise here).
	readSockaddr := func(pfx string) {
		for i := int16(0); i < sockaddrLen; i += 4 {
			emit(asm.StoreImm(asm.R8, offData+i, 0, asm.Word)) // no 64-bit store of an immediate
		}
		emit(
			asm.LoadMem(asm.R2, asm.RFP, stAddrLen, asm.DWord),
			asm.JLE.Imm(asm.R2, 28, pfx+"_len"),
			asm.Mov.Imm(asm.R2, 28),
		)
		label(pfx+"_len", asm.Mov.Reg(asm.R1, asm.R8))
		emit(
			asm.Add.Imm(asm.R1, offData),
			asm.LoadMem(asm.R3, asm.RFP, stAddr, asm.DWord),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, "discard_addr"),
			asm.LoadMem(asm.R1, asm.R8, offData, asm.Half),
			asm.JEq.Imm(asm.R1, 2, pfx+"_inet"),
			asm.JEq.Imm(asm.R1, 10, pfx+"_inet"),
			asm.Ja.Label("discard"),
		)
		p = append(p, asm.Mov.Imm(asm.R0, 0).WithSymbol(pfx+"_inet"))
	}

	// Entry: ctx is struct bpf_raw_tracepoint_args {regs, id}.
	emit(
		asm.LoadMem(asm.R7, asm.R1, 8, asm.DWord),
		asm.LoadMem(asm.R6, asm.R1, 0, asm.DWord),
	)
	for _, nr := range []int32{a.connect, a.sendto, a.sendmsg, a.write, a.close, a.open, a.openat, a.openat2, a.execve, a.execveat} {
		if nr >= 0 {
			emit(asm.JEq.Imm(asm.R7, nr, "wanted"))
		}
	}
	// Any other syscall matters only while some registered cgroup is marked
	// stopped (its processes' first syscall is reported): otherwise it
	// leaves here, before any lookup of the cgroup.
	emit(
		asm.StoreImm(asm.RFP, stZeroKey, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, m.config.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, stZeroKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "out"),
	)

	// The calling task: ours is ignored, others only if their cgroup is
	// registered (when filtering is on).
	label("wanted", asm.FnGetCurrentPidTgid.Call())
	emit(
		asm.StoreMem(asm.RFP, stPidTgid, asm.R0, asm.DWord),
		asm.FnGetCurrentCgroupId.Call(),
		asm.StoreMem(asm.RFP, stCgroup, asm.R0, asm.DWord),
		asm.StoreImm(asm.RFP, stZeroKey, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, m.config.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, stZeroKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 4, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, stPidTgid, asm.DWord),
		asm.RSh.Imm(asm.R2, 32),
		asm.JEq.Reg(asm.R1, asm.R2, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "dispatch"),
		asm.LoadMapPtr(asm.R1, m.cgroups.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, stCgroup),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		// A registered cgroup marked stopped: the first syscall of each of
		// its processes at or after the stop is a record of its own.
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "dispatch"),
		asm.StoreMem(asm.RFP, stStopAt, asm.R1, asm.DWord),
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R1, asm.RFP, stStopAt, asm.DWord),
		asm.JLT.Reg(asm.R0, asm.R1, "dispatch"),
		asm.LoadMem(asm.R1, asm.RFP, stCgroup, asm.DWord),
		asm.StoreMem(asm.RFP, stAlive, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, stPidTgid, asm.DWord),
		asm.RSh.Imm(asm.R1, 32),
		asm.StoreMem(asm.RFP, stAlive+8, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, m.alive.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, stAlive),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "dispatch"),
		// Claimed with NOEXIST: of two threads racing, one reports.
		asm.StoreImm(asm.RFP, stZeroKey, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, m.alive.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, stAlive),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, stZeroKey),
		asm.Mov.Imm(asm.R4, int32(ebpf.UpdateNoExist)),
		asm.FnMapUpdateElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "dispatch"),
	)
	reserve()
	emit(
		asm.StoreImm(asm.R8, offNr, immAlive, asm.Word),
		asm.StoreMem(asm.R8, offFd, asm.R7, asm.Word),
	)
	p = append(p, comm()...)
	emit(
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufSubmit.Call(),
	)
	label("dispatch", asm.JEq.Imm(asm.R7, a.connect, "connect"))
	emit(
		asm.JEq.Imm(asm.R7, a.sendto, "sendto"),
		asm.JEq.Imm(asm.R7, a.sendmsg, "sendmsg"),
		asm.JEq.Imm(asm.R7, a.write, "write"),
		asm.JEq.Imm(asm.R7, a.close, "close"),
		asm.JEq.Imm(asm.R7, a.openat, "path1"),
		asm.JEq.Imm(asm.R7, a.openat2, "path1"),
		asm.JEq.Imm(asm.R7, a.execve, "path0"),
		asm.JEq.Imm(asm.R7, a.execveat, "path1"),
	)
	if a.open >= 0 {
		emit(asm.JEq.Imm(asm.R7, a.open, "path0"))
	}
	emit(asm.Ja.Label("out"))

	// connect(fd, addr, addrlen). A socket connected to port 53 is
	// remembered so that its later write/send is read as a DNS query.
	label("connect", asm.Mov.Imm(asm.R0, 0))
	fdKey()
	spillArg(1, stAddr)
	spillArg(2, stAddrLen)
	reserve()
	fdToRecord()
	readSockaddr("c")
	emit(
		asm.LoadMem(asm.R1, asm.R8, offData+2, asm.Half),
		asm.JNE.Imm(asm.R1, 0x3500, "submit"), // port 53, network order read little-endian
		asm.LoadMapPtr(asm.R1, m.dnsfd.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, stFdKey),
		asm.Mov.Reg(asm.R3, asm.R8), asm.Add.Imm(asm.R3, offData),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.Ja.Label("submit"),
	)

	// sendto(fd, buf, len, flags, dest, addrlen): with a destination it is
	// read like a connect plus its payload; without, like a write.
	label("sendto", asm.Mov.Imm(asm.R0, 0))
	fdKey()
	spillArg(1, stPay)
	spillArg(2, stPayLen)
	spillArg(4, stAddr)
	spillArg(5, stAddrLen)
	emit(
		asm.LoadMem(asm.R1, asm.RFP, stAddr, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "fdsend"),
		asm.Ja.Label("addrsend"),
	)

	// sendmsg(fd, msg, flags): the destination is msg->msg_name, the
	// payload the first iovec.
	label("sendmsg", asm.Mov.Imm(asm.R0, 0))
	fdKey()
	readArg(1, asm.R9)
	emit(
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, stIovec, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, stIovec+8, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.RFP), asm.Add.Imm(asm.R1, stMsghdr),
		asm.Mov.Imm(asm.R2, 32),
		asm.Mov.Reg(asm.R3, asm.R9),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "drop_msg"),
		asm.LoadMem(asm.R3, asm.RFP, stMsghdr+16, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, "msg_noiov"),
		asm.Mov.Reg(asm.R1, asm.RFP), asm.Add.Imm(asm.R1, stIovec),
		asm.Mov.Imm(asm.R2, 16),
		asm.FnProbeReadUser.Call(),
	)
	label("msg_noiov", asm.LoadMem(asm.R1, asm.RFP, stIovec, asm.DWord))
	emit(
		asm.StoreMem(asm.RFP, stPay, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, stIovec+8, asm.DWord),
		asm.StoreMem(asm.RFP, stPayLen, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, stMsghdr+8, asm.Word),
		asm.StoreMem(asm.RFP, stAddrLen, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, stMsghdr, asm.DWord),
		asm.StoreMem(asm.RFP, stAddr, asm.R1, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "fdsend"),
		asm.Ja.Label("addrsend"),
	)

	// write(fd, buf, len): only on a socket connected to port 53.
	label("write", asm.Mov.Imm(asm.R0, 0))
	fdKey()
	spillArg(1, stPay)
	spillArg(2, stPayLen)
	emit(asm.Ja.Label("fdsend"))

	// close(fd): forget a DNS socket so a reused fd is not misread.
	label("close", asm.Mov.Imm(asm.R0, 0))
	fdKey()
	emit(
		asm.LoadMapPtr(asm.R1, m.dnsfd.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, stFdKey),
		asm.FnMapDeleteElem.Call(),
		asm.Ja.Label("out"),
	)

	// A send on a connected socket: shipped only if it was connected to
	// port 53, with the remembered destination.
	label("fdsend", asm.LoadMapPtr(asm.R1, m.dnsfd.FD()))
	emit(
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, stFdKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.StoreMem(asm.RFP, stValue, asm.R0, asm.DWord),
	)
	reserve()
	fdToRecord()
	emit(asm.LoadMem(asm.R2, asm.RFP, stValue, asm.DWord))
	for i := int16(0); i < sockaddrLen; i += 8 {
		emit(
			asm.LoadMem(asm.R1, asm.R2, i, asm.DWord),
			asm.StoreMem(asm.R8, offData+i, asm.R1, asm.DWord),
		)
	}
	emit(asm.Ja.Label("payload"))

	// A send with a destination.
	label("addrsend", asm.Mov.Imm(asm.R0, 0))
	reserve()
	fdToRecord()
	readSockaddr("s")
	emit(asm.Ja.Label("payload"))

	// The first bytes of the payload (a DNS query fits).
	label("payload", asm.LoadMem(asm.R9, asm.RFP, stPayLen, asm.DWord))
	emit(
		asm.JLE.Imm(asm.R9, payloadMax, "pay_len"),
		asm.Mov.Imm(asm.R9, payloadMax),
	)
	label("pay_len", asm.StoreMem(asm.R8, offLen, asm.R9, asm.Word))
	emit(
		asm.Mov.Reg(asm.R1, asm.R8), asm.Add.Imm(asm.R1, payloadOff),
		asm.Mov.Reg(asm.R2, asm.R9),
		asm.LoadMem(asm.R3, asm.RFP, stPay, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.JEq.Imm(asm.R0, 0, "submit"),
		asm.StoreImm(asm.R8, offLen, 0, asm.Word),
		asm.Ja.Label("submit"),
	)

	// open/openat/openat2/execve/execveat: the path or file name.
	label("path0", asm.Mov.Imm(asm.R0, 0))
	readArg(0, asm.R9)
	emit(asm.Ja.Label("path"))
	label("path1", asm.Mov.Imm(asm.R0, 0))
	readArg(1, asm.R9)
	label("path", asm.Mov.Imm(asm.R0, 0))
	reserve()
	emit(
		asm.Mov.Reg(asm.R1, asm.R8), asm.Add.Imm(asm.R1, offData),
		asm.Mov.Imm(asm.R2, pathMax),
		asm.Mov.Reg(asm.R3, asm.R9),
		asm.FnProbeReadUserStr.Call(),
		// A path not yet paged in reads as an error: shipped with length
		// 0, so user space can count what it could not read.
		asm.JSLT.Imm(asm.R0, 0, "submit"),
		asm.StoreMem(asm.R8, offLen, asm.R0, asm.Word),
		asm.Ja.Label("submit"),
	)

	p = append(p, tail(m, true)...)
	return p
}

// reserveRecord takes a record into r8 and fills its header from the stack
// (stPidTgid, stCgroup) and r7 (the number); a full ring jumps to
// drop_ring. loginuidOff is task_struct.loginuid's offset, 0 to leave it out.
func reserveRecord(m maps, loginuidOff uint32) asm.Instructions {
	p := asm.Instructions{
		asm.LoadMapPtr(asm.R1, m.events.FD()),
		asm.Mov.Imm(asm.R2, recSize),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.JEq.Imm(asm.R8, 0, "drop_ring"),
		asm.LoadMem(asm.R1, asm.RFP, stPidTgid, asm.DWord),
		asm.StoreMem(asm.R8, offPidTgid, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, stCgroup, asm.DWord),
		asm.StoreMem(asm.R8, offCgroup, asm.R1, asm.DWord),
		asm.StoreMem(asm.R8, offNr, asm.R7, asm.Word),
		asm.StoreImm(asm.R8, offFd, 0, asm.Word),
		asm.StoreImm(asm.R8, offLen, 0, asm.Word),
		asm.StoreImm(asm.R8, offLoginUID, 0, asm.Word),
	}
	if loginuidOff != 0 {
		p = append(p,
			asm.FnGetCurrentTask.Call(),
			asm.Mov.Reg(asm.R3, asm.R0), asm.Add.Imm(asm.R3, int32(loginuidOff)),
			asm.Mov.Reg(asm.R1, asm.R8), asm.Add.Imm(asm.R1, offLoginUID),
			asm.Mov.Imm(asm.R2, 4),
			asm.FnProbeReadKernel.Call(),
		)
	}
	return append(p,
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R8, offKtime, asm.R0, asm.DWord),
	)
}

// comm copies the current task's name into the record's data.
func comm() asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R8), asm.Add.Imm(asm.R1, offData),
		asm.Mov.Imm(asm.R2, commLen),
		asm.FnGetCurrentComm.Call(),
	}
}

// tail is the programs' common ending: submit or discard the record in r8,
// count a lost record by reason, return 0. The verifier refuses code no
// path reaches: without network, only what the exit program uses.
func tail(m maps, network bool) asm.Instructions {
	p := asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R8).WithSymbol("submit"),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufSubmit.Call(),
		asm.Ja.Label("out"),
	}
	type drop struct {
		label  string
		reason int64
	}
	drops := []drop{{"drop_ring", dropRingFull}}
	if network {
		p = append(p,
			asm.Mov.Reg(asm.R1, asm.R8).WithSymbol("discard"),
			asm.Mov.Imm(asm.R2, 0),
			asm.FnRingbufDiscard.Call(),
			asm.Ja.Label("out"),
			asm.Mov.Reg(asm.R1, asm.R8).WithSymbol("discard_addr"),
			asm.Mov.Imm(asm.R2, 0),
			asm.FnRingbufDiscard.Call(),
			asm.Ja.Label("drop_addr"),
		)
		drops = append(drops, drop{"drop_addr", dropAddrUnread}, drop{"drop_msg", dropMsgUnread})
	}
	for _, d := range drops {
		p = append(p,
			asm.StoreImm(asm.RFP, stDropKey, d.reason, asm.Word).WithSymbol(d.label),
			asm.Ja.Label("count_drop"),
		)
	}
	// Per-CPU slot: no other CPU writes it, a plain add is enough.
	return append(p,
		asm.LoadMapPtr(asm.R1, m.drops.FD()).WithSymbol("count_drop"),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, stDropKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// exitInstructions assembles the sched_process_exit program: one record per
// exiting task of a registered cgroup (all cgroups when filtering is off),
// with the kernel's time. groupDead says whether the tracepoint passes
// group_dead as its second argument (read from the kernel's BTF).
func exitInstructions(m maps, loginuidOff uint32, groupDead bool) asm.Instructions {
	p := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1), // ctx: u64 args[] {task, group_dead}
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, stPidTgid, asm.R0, asm.DWord),
		asm.FnGetCurrentCgroupId.Call(),
		asm.StoreMem(asm.RFP, stCgroup, asm.R0, asm.DWord),
		asm.StoreImm(asm.RFP, stZeroKey, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, m.config.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, stZeroKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 4, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, stPidTgid, asm.DWord),
		asm.RSh.Imm(asm.R2, 32),
		asm.JEq.Reg(asm.R1, asm.R2, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "record"),
		asm.LoadMapPtr(asm.R1, m.cgroups.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, stCgroup),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R7, immExit).WithSymbol("record"),
	}
	p = append(p, reserveRecord(m, loginuidOff)...)
	if groupDead {
		p = append(p,
			asm.LoadMem(asm.R1, asm.R6, 8, asm.DWord),
			asm.And.Imm(asm.R1, 1),
			asm.StoreMem(asm.R8, offFd, asm.R1, asm.Word),
		)
	} else {
		p = append(p, asm.StoreImm(asm.R8, offFd, 2, asm.Word))
	}
	p = append(p, comm()...)
	p = append(p, asm.Ja.Label("submit"))
	return append(p, tail(m, false)...)
}

// newMaps creates the program's maps; each is owned by its fd, so a crash
// frees them with the process.
func newMaps(ringBytes uint32) (maps, error) {
	var m maps
	var err error
	mk := func(spec *ebpf.MapSpec) *ebpf.Map {
		if err != nil {
			return nil
		}
		var mp *ebpf.Map
		mp, err = ebpf.NewMap(spec)
		if err != nil {
			err = fmt.Errorf("map %s: %w", spec.Name, err)
		}
		return mp
	}
	m.events = mk(&ebpf.MapSpec{Name: "gh_events", Type: ebpf.RingBuf, MaxEntries: ringBytes})
	m.config = mk(&ebpf.MapSpec{Name: "gh_config", Type: ebpf.Array, KeySize: 4, ValueSize: configSize, MaxEntries: 1})
	m.cgroups = mk(&ebpf.MapSpec{Name: "gh_cgroups", Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 4096})
	m.dnsfd = mk(&ebpf.MapSpec{Name: "gh_dnsfd", Type: ebpf.LRUHash, KeySize: 8, ValueSize: sockaddrLen, MaxEntries: 4096})
	m.drops = mk(&ebpf.MapSpec{Name: "gh_drops", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: nDropReasons})
	m.alive = mk(&ebpf.MapSpec{Name: "gh_alive", Type: ebpf.LRUHash, KeySize: 16, ValueSize: 1, MaxEntries: 4096})
	if err != nil {
		m.close()
		return maps{}, err
	}
	return m, nil
}

func (m maps) close() {
	for _, mp := range m.all() {
		if mp != nil {
			mp.Close()
		}
	}
}
