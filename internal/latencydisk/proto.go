//go:build linux

package latencydisk

import (
	"encoding/binary"
	"syscall"
)

// The part of the FUSE kernel protocol (include/uapi/linux/fuse.h) that serving one file needs. Every
// structure is little-endian on the machines this runs on (binary.NativeEndian) and laid out as the kernel's.

// Opcodes.
const (
	opLookup      = 1
	opForget      = 2
	opGetattr     = 3
	opSetattr     = 4
	opOpen        = 14
	opRead        = 15
	opWrite       = 16
	opStatfs      = 17
	opRelease     = 18
	opFsync       = 20
	opFlush       = 25
	opInit        = 26
	opOpendir     = 27
	opReaddir     = 28
	opReleasedir  = 29
	opFsyncdir    = 30
	opAccess      = 34
	opInterrupt   = 36
	opDestroy     = 38
	opBatchForget = 42
)

// FUSE_INIT flags this server accepts: reads in parallel, big writes, requests up to maxPages pages, and
// asynchronous direct I/O, without which the kernel sends a loop device's direct I/O one request at a time.
const (
	initAsyncRead = 1 << 0
	initBigWrites = 1 << 5
	initAsyncDIO  = 1 << 15
	initMaxPages  = 1 << 22
)

// FUSE_OPEN reply flags: no page cache for the file (every read and write reaches this server), and
// direct writes in parallel.
const (
	fopenDirectIO                    = 1 << 0
	fopenParallelDirectWrites        = 1 << 6
	protoMajor                       = 7
	protoMinor                       = 31 // max_pages (7.28); nothing later is used
	inHeaderSize                     = 40
	outHeaderSize                    = 16
	attrSize                         = 88
	readInSize                       = 40
	writeInSize                      = 40
	rootID                           = 1
	fileID                           = 2
	maxWrite                         = 1 << 20
	maxPages                         = maxWrite / 4096
	maxBackground                    = 64
	readBufSize                      = maxWrite + 4096
	attrValidSeconds                 = 1
	statfsSize                       = 80
	direntHeaderSize                 = 24
	fattrSize                        = 1 << 3
	fsyncFdatasync            uint32 = 1
)

var ne = binary.NativeEndian

// inHeader is fuse_in_header.
type inHeader struct {
	Len, Opcode uint32
	Unique      uint64
	NodeID      uint64
}

func parseInHeader(b []byte) (inHeader, bool) {
	if len(b) < inHeaderSize {
		return inHeader{}, false
	}
	return inHeader{Len: ne.Uint32(b[0:]), Opcode: ne.Uint32(b[4:]), Unique: ne.Uint64(b[8:]), NodeID: ne.Uint64(b[16:])}, true
}

// reply is fuse_out_header followed by payload; errno 0 is success.
func reply(unique uint64, errno syscall.Errno, payload []byte) []byte {
	out := make([]byte, outHeaderSize+len(payload))
	ne.PutUint32(out[0:], uint32(len(out)))
	ne.PutUint32(out[4:], uint32(-int32(errno))) //nolint:gosec // errno is small and positive
	ne.PutUint64(out[8:], unique)
	copy(out[outHeaderSize:], payload)
	return out
}

// attr is fuse_attr.
type attr struct {
	Ino, Size, Blocks uint64
	Mtime             uint64
	Mode, Nlink       uint32
	Blksize           uint32
}

func (a attr) put(b []byte) {
	ne.PutUint64(b[0:], a.Ino)
	ne.PutUint64(b[8:], a.Size)
	ne.PutUint64(b[16:], a.Blocks)
	ne.PutUint64(b[24:], a.Mtime) // atime
	ne.PutUint64(b[32:], a.Mtime)
	ne.PutUint64(b[40:], a.Mtime) // ctime
	ne.PutUint32(b[60:], a.Mode)
	ne.PutUint32(b[64:], a.Nlink)
	ne.PutUint32(b[80:], a.Blksize)
}

// entryOut is fuse_entry_out for a.
func entryOut(a attr) []byte {
	b := make([]byte, 40+attrSize)
	ne.PutUint64(b[0:], a.Ino)
	ne.PutUint64(b[16:], attrValidSeconds)
	ne.PutUint64(b[24:], attrValidSeconds)
	a.put(b[40:])
	return b
}

// attrOut is fuse_attr_out for a.
func attrOut(a attr) []byte {
	b := make([]byte, 16+attrSize)
	ne.PutUint64(b[0:], attrValidSeconds)
	a.put(b[16:])
	return b
}
