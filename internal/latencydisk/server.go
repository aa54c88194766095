//go:build linux

// Package latencydisk adds a per-I/O latency to a disk image: a FUSE file system that serves one file, the
// image, and holds every read, write and flush that reaches it for at least a configured time before it
// answers. A loop device attached to that file (with direct I/O) is a block device whose every I/O costs
// that latency, as a network volume's does, while what the page cache above it holds costs nothing.
//
// The server speaks the kernel's FUSE protocol itself (no library): it must ask for asynchronous direct I/O
// (FUSE_ASYNC_DIO), without which the kernel hands a loop device's I/O to it one request at a time, so a
// latency of 1 ms would also cap the device at 1,000 I/O operations per second. With it, requests overlap:
// the latency is per I/O, and caps on operations per second are left to the block layer (cgroup blkio).
// The file is opened with FOPEN_DIRECT_IO, so no page cache on the FUSE side hides the latency, and the
// image itself is read and written with O_DIRECT where its file system allows, so the host's page cache
// holds no second copy either.
package latencydisk

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// FileName is the name of the served image in the mounted directory.
const FileName = "disk"

// Latency is the least time each I/O takes, measured from when the server receives it: the I/O on the
// image is done first and the answer held back for what remains. Zero adds nothing.
type Latency struct {
	// Read is per read request, Write per write request, Flush per fsync (a cache flush of the loop
	// device above, which file systems issue for fsync and journal commits).
	Read  time.Duration `json:"read_ns"`
	Write time.Duration `json:"write_ns"`
	Flush time.Duration `json:"flush_ns"`
}

// IsZero reports whether l adds nothing.
func (l Latency) IsZero() bool { return l == Latency{} }

// String is l in milliseconds.
func (l Latency) String() string {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return fmt.Sprintf("read %g ms, write %g ms, flush %g ms", ms(l.Read), ms(l.Write), ms(l.Flush))
}

// Stats count what a server answered.
type Stats struct {
	Reads, Writes, Flushes int64
	// MaxInFlight is the most reads, writes and flushes it held at once.
	MaxInFlight int64
}

// Server serves one image at one mount point.
type Server struct {
	dir      string
	fd       int
	buffered *os.File
	direct   *os.File // nil when the image's file system refuses O_DIRECT
	latency  atomic.Pointer[Latency]

	reads, writes, flushes, inFlight, maxInFlight atomic.Int64

	bufs     sync.Pool
	handlers sync.WaitGroup
}

// Mount mounts a FUSE file system at dir (an existing directory) that serves image as dir/FileName, with
// latency l. Serve must run for anything to be answered; the caller must be root.
func Mount(image, dir string, l Latency) (*Server, error) {
	s := &Server{dir: dir, fd: -1}
	s.latency.Store(&l)
	s.bufs.New = func() any { b := make([]byte, readBufSize); return &b }
	var err error
	if s.buffered, err = os.OpenFile(image, os.O_RDWR, 0); err != nil {
		return nil, fmt.Errorf("opening the disk image: %w", err)
	}
	if f, err := os.OpenFile(image, os.O_RDWR|syscall.O_DIRECT, 0); err == nil {
		s.direct = f
	}
	if s.fd, err = syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("opening /dev/fuse: %w (FUSE is needed for a disk with latency: modprobe fuse)", err)
	}
	// default_permissions: the kernel checks the file's mode (0600, root), so allow_other (which the loop
	// device's worker needs) opens the image to nobody else.
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d,default_permissions,allow_other,max_read=%d", s.fd, os.Getuid(), os.Getgid(), maxWrite)
	if err := syscall.Mount(image, dir, "fuse."+fsType, syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("mounting the latency layer at %s: %w", dir, err)
	}
	return s, nil
}

// fsType is the FUSE subtype in /proc/self/mountinfo (fuse.pgnvme-latency).
const fsType = "pgnvme-latency"

// SetLatency changes the latency of the I/O received from now on.
func (s *Server) SetLatency(l Latency) { s.latency.Store(&l) }

// Latency is the latency in force.
func (s *Server) Latency() Latency { return *s.latency.Load() }

// Stats are the counts so far.
func (s *Server) Stats() Stats {
	return Stats{Reads: s.reads.Load(), Writes: s.writes.Load(), Flushes: s.flushes.Load(), MaxInFlight: s.maxInFlight.Load()}
}

// Unmount unmounts the file system (it fails with EBUSY while a loop device is attached to the image);
// Serve then returns.
func (s *Server) Unmount() error { return syscall.Unmount(s.dir, 0) }

// readers is how many goroutines read requests; each read, write and flush is then answered by one of its
// own, so requests overlap however many arrive.
const readers = 4

// Serve answers requests until the file system is unmounted, then closes its files.
func (s *Server) Serve() error {
	errc := make(chan error, readers)
	for range readers {
		go func() { errc <- s.readLoop() }()
	}
	var errs []error
	for range readers {
		errs = append(errs, <-errc)
	}
	s.handlers.Wait()
	s.closeFiles()
	return errors.Join(errs...)
}

func (s *Server) closeFiles() {
	if s.fd >= 0 {
		_ = syscall.Close(s.fd)
		s.fd = -1
	}
	for _, f := range []*os.File{s.buffered, s.direct} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// readLoop reads requests until the connection ends (ENODEV: unmounted).
func (s *Server) readLoop() error {
	for {
		bp := s.bufs.Get().(*[]byte)
		n, err := syscall.Read(s.fd, *bp)
		switch {
		case errors.Is(err, syscall.ENODEV):
			s.bufs.Put(bp)
			return nil
		case errors.Is(err, syscall.EINTR), errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.ENOENT):
			s.bufs.Put(bp) // ENOENT: the request was interrupted before it was read
			continue
		case err != nil:
			s.bufs.Put(bp)
			return fmt.Errorf("reading /dev/fuse: %w", err)
		}
		req := (*bp)[:n]
		h, ok := parseInHeader(req)
		if !ok {
			s.bufs.Put(bp)
			continue
		}
		switch h.Opcode {
		case opRead, opWrite, opFsync:
			s.handlers.Add(1)
			go func() {
				defer s.handlers.Done()
				defer s.bufs.Put(bp)
				s.io(h, req, time.Now())
			}()
		default:
			s.meta(h, req)
			s.bufs.Put(bp)
		}
	}
}

// send writes one answer; an interrupted request (ENOENT) needs none.
func (s *Server) send(out []byte) {
	if _, err := syscall.Write(s.fd, out); err != nil && !errors.Is(err, syscall.ENOENT) {
		fmt.Fprintf(os.Stderr, "latencydisk: answering the kernel: %v\n", err)
	}
}

// meta answers everything but reads, writes and flushes.
func (s *Server) meta(h inHeader, req []byte) {
	body := req[inHeaderSize:]
	var out []byte
	var errno syscall.Errno
	switch h.Opcode {
	case opForget, opBatchForget, opInterrupt:
		return // no answer
	case opInit:
		out = initOut(body)
	case opLookup:
		name, _, _ := cutNUL(body)
		if h.NodeID != rootID || name != FileName {
			errno = syscall.ENOENT
			break
		}
		a, err := s.fileAttr()
		out, errno = entryOut(a), errnoOf(err)
	case opGetattr, opSetattr:
		if h.Opcode == opSetattr && len(body) >= 24 && ne.Uint32(body[0:])&fattrSize != 0 {
			if st, err := s.buffered.Stat(); err != nil || ne.Uint64(body[16:]) != uint64(st.Size()) { //nolint:gosec // sizes are positive
				errno = syscall.EPERM // the image's size is fixed
				break
			}
		}
		switch h.NodeID {
		case rootID:
			out = attrOut(rootAttr())
		case fileID:
			a, err := s.fileAttr()
			out, errno = attrOut(a), errnoOf(err)
		default:
			errno = syscall.ENOENT
		}
	case opOpen:
		if h.NodeID != fileID {
			errno = syscall.EISDIR
			break
		}
		out = make([]byte, 16)
		ne.PutUint64(out[0:], 1)
		ne.PutUint32(out[8:], fopenDirectIO|fopenParallelDirectWrites)
	case opOpendir:
		if h.NodeID != rootID {
			errno = syscall.ENOTDIR
			break
		}
		out = make([]byte, 16)
	case opReaddir:
		if len(body) < readInSize {
			errno = syscall.EINVAL
			break
		}
		out = readdir(ne.Uint64(body[8:]), ne.Uint32(body[16:]))
	case opStatfs:
		out = make([]byte, statfsSize)
		if st, err := s.buffered.Stat(); err == nil {
			ne.PutUint64(out[0:], uint64(st.Size())/4096) //nolint:gosec // sizes are positive
		}
		ne.PutUint64(out[24:], 1)    // files
		ne.PutUint32(out[40:], 4096) // bsize
		ne.PutUint32(out[44:], 255)  // namelen
		ne.PutUint32(out[48:], 4096) // frsize
	case opRelease, opReleasedir, opFlush, opFsyncdir, opAccess, opDestroy:
		// nothing to do: FLUSH is a close(), not a cache flush (that is FSYNC)
	default:
		errno = syscall.ENOSYS
	}
	s.send(reply(h.Unique, errno, out))
}

// io answers a read, write or fsync received at start, no earlier than its latency after start.
func (s *Server) io(h inHeader, req []byte, start time.Time) {
	body := req[inHeaderSize:]
	if c := s.inFlight.Add(1); c > s.maxInFlight.Load() {
		for m := s.maxInFlight.Load(); c > m && !s.maxInFlight.CompareAndSwap(m, c); m = s.maxInFlight.Load() {
		}
	}
	defer s.inFlight.Add(-1)
	l := s.Latency()
	var out []byte
	var errno syscall.Errno
	var hold time.Duration
	switch h.Opcode {
	case opRead:
		s.reads.Add(1)
		hold = l.Read
		if len(body) < readInSize {
			errno = syscall.EINVAL
			break
		}
		off, size := int64(ne.Uint64(body[8:])), int(ne.Uint32(body[16:])) //nolint:gosec // the kernel's offsets fit
		buf := aligned(size)
		n, err := s.pread(buf, off)
		out, errno = buf[:n], errnoOf(err)
	case opWrite:
		s.writes.Add(1)
		hold = l.Write
		if len(body) < writeInSize {
			errno = syscall.EINVAL
			break
		}
		off, size := int64(ne.Uint64(body[8:])), int(ne.Uint32(body[16:])) //nolint:gosec // the kernel's offsets fit
		data := body[writeInSize:]
		if size > len(data) {
			errno = syscall.EINVAL
			break
		}
		n, err := s.pwrite(data[:size], off)
		out = make([]byte, 8)
		ne.PutUint32(out[0:], uint32(n)) //nolint:gosec // n <= size
		errno = errnoOf(err)
	case opFsync:
		s.flushes.Add(1)
		hold = l.Flush
		errno = errnoOf(syscall.Fdatasync(int(s.buffered.Fd())))
	}
	if rest := hold - time.Since(start); rest > 0 {
		holdFor(rest)
	}
	s.send(reply(h.Unique, errno, out))
}

// prSetTimerslack is prctl(2)'s PR_SET_TIMERSLACK (the syscall package does not name it).
const prSetTimerslack = 29

// holdFor blocks the calling goroutine for d, within the kernel's timer latency. time.Sleep cannot hold
// less than a millisecond: the runtime waits for its timers in epoll_pwait, whose timeout is whole
// milliseconds, so a 30 us or 100 us sleep takes about 1.1 ms (measured on a 2-CPU VM), and a read latency
// of 0.1 ms would be eleven times that. nanosleep(2) on the goroutine's own thread, with that thread's timer
// slack cut from the default 50 us to 1 ns, wakes 30-40 us late on the same VM. The thread is the
// goroutine's for the hold (the runtime runs other goroutines on other threads meanwhile), so each I/O in
// flight holds a thread, as many as the loop device queues at once.
func holdFor(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The slack is the thread's: set on every hold, since a goroutine may land on any thread (a failure
	// leaves the default slack, 50 us late).
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR { //nolint:revive // the remaining time is in ts
	}
}

// dioAlign is the alignment O_DIRECT needs of offsets, lengths and memory (the logical block size of
// the image's device, 512 bytes, or less).
const dioAlign = 512

// pread reads at off: with O_DIRECT when it can, else through the page cache. Reading past the end of
// the image is a short read.
func (s *Server) pread(buf []byte, off int64) (int, error) {
	var n int
	var err error = syscall.EINVAL
	if s.direct != nil && off%dioAlign == 0 && len(buf)%dioAlign == 0 {
		n, err = s.direct.ReadAt(buf, off)
	}
	if errors.Is(err, syscall.EINVAL) {
		// Unaligned, or a file system that wants more alignment than dioAlign: through the page cache.
		n, err = s.buffered.ReadAt(buf, off)
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// pwrite writes data at off, as pread reads.
func (s *Server) pwrite(data []byte, off int64) (int, error) {
	if s.direct != nil && off%dioAlign == 0 && len(data)%dioAlign == 0 {
		buf := aligned(len(data))
		copy(buf, data)
		if n, err := s.direct.WriteAt(buf, off); !errors.Is(err, syscall.EINVAL) {
			return n, err
		}
	}
	return s.buffered.WriteAt(data, off)
}

// aligned is a buffer of n bytes aligned for O_DIRECT.
func aligned(n int) []byte {
	b := make([]byte, n+4096)
	skip := (4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096)) % 4096
	return b[skip : skip+n : skip+n]
}

// fileAttr is the image's fuse_attr.
func (s *Server) fileAttr() (attr, error) {
	st, err := s.buffered.Stat()
	if err != nil {
		return attr{}, err
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	a := attr{Ino: fileID, Size: uint64(st.Size()), Mtime: uint64(st.ModTime().Unix()), Mode: syscall.S_IFREG | 0o600, Nlink: 1, Blksize: 4096} //nolint:gosec // sizes and times are positive
	if sys != nil {
		a.Blocks = uint64(sys.Blocks) //nolint:gosec // a block count is positive
	}
	return a, nil
}

func rootAttr() attr {
	return attr{Ino: rootID, Mode: syscall.S_IFDIR | 0o755, Nlink: 2, Blksize: 4096}
}

// initOut answers FUSE_INIT (fuse_init_out): protocol 7.31 at most, the flags this server uses.
func initOut(in []byte) []byte {
	out := make([]byte, 64)
	minor, readahead, flags := uint32(protoMinor), uint32(0), uint32(0)
	if len(in) >= 16 {
		minor = min(ne.Uint32(in[4:]), protoMinor)
		readahead, flags = ne.Uint32(in[8:]), ne.Uint32(in[12:])
	}
	ne.PutUint32(out[0:], protoMajor)
	ne.PutUint32(out[4:], minor)
	ne.PutUint32(out[8:], readahead)
	ne.PutUint32(out[12:], flags&(initAsyncRead|initBigWrites|initAsyncDIO|initMaxPages))
	ne.PutUint16(out[16:], maxBackground)
	ne.PutUint16(out[18:], maxBackground*3/4)
	ne.PutUint32(out[20:], maxWrite)
	ne.PutUint32(out[24:], 1) // time_gran
	ne.PutUint16(out[28:], maxPages)
	return out
}

// readdir is the root directory's fuse_dirents from offset on, within size bytes.
func readdir(offset uint64, size uint32) []byte {
	var out []byte
	for i, e := range []struct {
		name string
		ino  uint64
		typ  uint32
	}{{".", rootID, syscall.DT_DIR}, {"..", rootID, syscall.DT_DIR}, {FileName, fileID, syscall.DT_REG}} {
		if uint64(i) < offset {
			continue
		}
		rec := (direntHeaderSize + len(e.name) + 7) &^ 7
		if len(out)+rec > int(size) {
			break
		}
		b := make([]byte, rec)
		ne.PutUint64(b[0:], e.ino)
		ne.PutUint64(b[8:], uint64(i+1))
		ne.PutUint32(b[16:], uint32(len(e.name))) //nolint:gosec // short names
		ne.PutUint32(b[20:], e.typ)
		copy(b[direntHeaderSize:], e.name)
		out = append(out, b...)
	}
	return out
}

func cutNUL(b []byte) (string, []byte, bool) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), b[i+1:], true
		}
	}
	return string(b), nil, false
}

// errnoOf is err's errno for the kernel (EIO when it has none).
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}

// marshalLatency and unmarshalLatency are the configuration file's format.
func marshalLatency(l Latency) ([]byte, error) { return json.Marshal(l) }

func unmarshalLatency(b []byte) (Latency, error) {
	var l Latency
	err := json.Unmarshal(b, &l)
	return l, err
}
