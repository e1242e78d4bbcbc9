// A synchronous scanner of a tar stream: it reads the 512-byte headers (ustar, GNU, pax) and passes over the entries'
// bytes by counting them, since the reader keeps the whole inflated tar anyway and needs of each entry only its
// header and where its bytes start. It reads headers as tar-stream 3 does (the same fields, checksum, formats, long
// names and pax records, the same offsets), without a stream, a promise or an event per entry.

/** The entry types of tar-stream's headers (`Header["type"]`), from the typeflag; null for an unknown flag. */
export type EntryType =
  "file" | "link" | "symlink" | "character-device" | "block-device" | "directory" | "fifo" | "contiguous-file"

type LongType = "pax-header" | "pax-global-header" | "gnu-long-link-path" | "gnu-long-path"

/** One entry's header, as tar-stream reports it (the fields the bundle checks read). */
export interface Header {
  /** ustar and GNU names as latin1 (one char per byte); a pax `path` as UTF-8. */
  readonly name: string
  readonly type: EntryType | null
  /** Its bytes in the tar (a pax `size` record replaces the header's). */
  readonly size: number
  /** The pax records that applied to this entry (global ones merged in), or null. */
  readonly pax: Readonly<Record<string, string>> | null
  /** Where its bytes start in the tar. */
  readonly byteOffset: number
}

/** Why the scan stopped: the archive ended inside a header or an entry, or it is not a valid tar. */
export type ScanFailure = "truncated" | "corrupt"

/**
 * What to do with an entry once its header is read: `undefined` passes over its bytes, `"keep"` gathers them for
 * `onKept`, anything else stops the scan and is answered by `write`.
 */
export type Verdict<F> = undefined | "keep" | F

/** Extended headers (pax, GNU long names) above this are refused, as tar-stream does. */
const longHeaderMaxBytes = 4 * 1024 * 1024

const blockBytes = 512

/** The padding after `size` bytes of an entry, up to the next 512-byte block. */
const padding = (size: number) => {
  const over = size % blockBytes
  return over === 0 ? 0 : blockBytes - over
}

const typeOf = (flag: number): EntryType | LongType | null => {
  switch (flag) {
    case 0:
      return "file"
    case 1:
      return "link"
    case 2:
      return "symlink"
    case 3:
      return "character-device"
    case 4:
      return "block-device"
    case 5:
      return "directory"
    case 6:
      return "fifo"
    case 7:
      return "contiguous-file"
    case 72:
      return "pax-header"
    case 55:
      return "pax-global-header"
    case 27:
      return "gnu-long-link-path"
    case 28:
    case 30:
      return "gnu-long-path"
  }
  return null
}

/** The first index of `byte` in `block[from, to)`, or `to`. */
const indexOf = (block: Uint8Array, byte: number, from: number, to: number) => {
  for (let at = from; at < to; at++) if (block[at] === byte) return at
  return to
}

/** A NUL-terminated string field. */
const text = (block: Buffer, from: number, length: number, encoding: BufferEncoding) =>
  block.toString(encoding, from, indexOf(block, 0, from, from + length))

/** A base-256 number (GNU): the first byte 0x80 for positive, 0xff for negative; null otherwise. */
const base256 = (field: Uint8Array): number | null => {
  const positive = field[0] === 0x80
  if (!positive && field[0] !== 0xff) return null
  let sum = 0
  for (let at = field.length - 1, scale = 1; at > 0; at--, scale *= 256) {
    sum += (positive ? field[at] : 0xff - field[at]) * scale
  }
  return positive ? sum : -sum
}

/** An octal field: leading spaces and NULs skipped, up to the next space; NaN when it is not octal. */
const octal = (block: Buffer, from: number, length: number): number | null => {
  const field = block.subarray(from, from + length)
  if ((field[0] & 0x80) !== 0) return base256(field)
  let start = 0
  while (start < field.length && field[start] === 32) start++
  const end = indexOf(field, 32, start, field.length)
  while (start < end && field[start] === 0) start++
  return end === start ? 0 : parseInt(field.toString("utf8", start, end), 8)
}

/** The sum of the header's bytes with the checksum field taken as spaces. */
const checksum = (block: Uint8Array) => {
  let sum = 8 * 32
  for (let at = 0; at < 148; at++) sum += block[at]
  for (let at = 156; at < blockBytes; at++) sum += block[at]
  return sum
}

const ustarMagic = Buffer.from("ustar\0", "latin1")
const gnuMagic = Buffer.from("ustar ", "latin1")
const gnuVersion = Buffer.from(" \0", "latin1")

const matches = (block: Buffer, at: number, expected: Buffer) =>
  block.compare(expected, 0, expected.length, at, at + expected.length) === 0

interface RawHeader {
  readonly name: string
  readonly type: EntryType | LongType | null
  readonly size: number | null
}

/** A header block: null for a block of zeros (the end of the archive), "corrupt" for a bad checksum or format. */
const decodeHeader = (block: Buffer): RawHeader | null | "corrupt" => {
  const sum = checksum(block)
  if (sum === 8 * 32) return null
  if (sum !== octal(block, 148, 8)) return "corrupt"
  let name = text(block, 0, 100, "latin1")
  if (matches(block, 257, ustarMagic)) {
    if (block[345] !== 0) name = `${text(block, 345, 155, "latin1")}/${name}`
  } else if (!(matches(block, 257, gnuMagic) && matches(block, 263, gnuVersion))) {
    return "corrupt"
  }
  // A typeflag of 0 with a trailing slash is an old-style folder to some tars, but tar-stream keeps its type: a file.
  return { name, type: typeOf(block[156] === 0 ? 0 : block[156] - 48), size: octal(block, 124, 12) }
}

/** Pax records, `<length> <key>=<value>\n` each, decoded as tar-stream does (UTF-8; a malformed record ends them). */
const decodePax = (bytes: Buffer): Record<string, string> => {
  const records: Record<string, string> = {}
  let rest = bytes
  while (rest.length > 0) {
    const space = indexOf(rest, 32, 0, rest.length)
    const length = parseInt(rest.toString("utf8", 0, space), 10)
    if (!length) return records
    // subarray, not toString's bounds: a negative length counts from the end, as in tar-stream.
    const record = rest.subarray(space + 1, length - 1).toString("utf8")
    const equals = record.indexOf("=")
    if (equals === -1) return records
    records[record.slice(0, equals)] = record.slice(equals + 1)
    rest = rest.subarray(length)
  }
  return records
}

/** Bytes being gathered: an extended header's body, or a kept entry's. */
interface Gathering {
  readonly type: LongType | "keep"
  readonly size: number
  readonly parts: Array<Buffer>
  missing: number
}

/**
 * Scans a tar archive written to it chunk by chunk. `onEntry` sees each entry's header (extended headers applied) in
 * order; `write` answers the first failure or verdict that stops the scan, and `end` whether the archive ended
 * between entries. Bytes between entries are passed over, never copied, except extended headers and kept entries.
 */
export class TarScanner<F> {
  /** Bytes of the tar scanned so far. */
  private position = 0
  private readonly header = Buffer.alloc(blockBytes)
  private headerBytes = 0
  /** Bytes to pass over before the next header: an entry's body and padding. */
  private skip = 0
  private gathering: Gathering | undefined
  /** Padding to pass over once the gathered bytes are in. */
  private gatheredPadding = 0
  private gnuLongPath: string | null = null
  private pax: Record<string, string> | null = null
  private paxGlobal: Record<string, string> | null = null

  private readonly onEntry: (header: Header) => Verdict<F>
  private readonly onKept: (bytes: Buffer) => F | undefined

  constructor(onEntry: (header: Header) => Verdict<F>, onKept: (bytes: Buffer) => F | undefined) {
    this.onEntry = onEntry
    this.onKept = onKept
  }

  /** Scans the next bytes of the archive; answers what stopped the scan, and nothing more may be written then. */
  write(chunk: Uint8Array): F | ScanFailure | undefined {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    let at = 0
    while (at < bytes.length) {
      if (this.skip > 0) {
        const passed = Math.min(this.skip, bytes.length - at)
        this.skip -= passed
        at += passed
        this.position += passed
        continue
      }
      const gathering = this.gathering
      if (gathering !== undefined) {
        const taken = Math.min(gathering.missing, bytes.length - at)
        // A copy: the caller hands the chunk on, and a kept manifest is small.
        gathering.parts.push(Buffer.from(bytes.subarray(at, at + taken)))
        gathering.missing -= taken
        at += taken
        this.position += taken
        if (gathering.missing === 0) {
          this.gathering = undefined
          this.skip = this.gatheredPadding
          const stop = this.gathered(gathering)
          if (stop !== undefined) return stop
        }
        continue
      }
      let block: Buffer
      if (this.headerBytes === 0 && bytes.length - at >= blockBytes) {
        block = bytes.subarray(at, at + blockBytes)
        at += blockBytes
        this.position += blockBytes
      } else {
        // A header split between two chunks: gathered in a block of its own.
        const taken = Math.min(blockBytes - this.headerBytes, bytes.length - at)
        bytes.copy(this.header, this.headerBytes, at, at + taken)
        this.headerBytes += taken
        at += taken
        this.position += taken
        if (this.headerBytes < blockBytes) continue
        this.headerBytes = 0
        block = this.header
      }
      const stop = this.nextHeader(block)
      if (stop !== undefined) return stop
    }
    return undefined
  }

  /** At the end of the archive: "truncated" when it ends inside a header, an entry or its padding. */
  end(): ScanFailure | undefined {
    return this.skip > 0 || this.gathering !== undefined || this.headerBytes > 0 ? "truncated" : undefined
  }

  private nextHeader(block: Buffer): F | ScanFailure | undefined {
    const raw = decodeHeader(block)
    if (raw === null) return undefined
    if (raw === "corrupt") return "corrupt"
    const type = raw.type
    switch (type) {
      case "pax-header":
      case "pax-global-header":
      case "gnu-long-link-path":
      case "gnu-long-path": {
        // tar-stream reads an empty or unreadable size here as no bytes and then misreads the entry after it (the
        // next entry's padding is taken for the extended header); such an archive is refused rather than guessed at.
        const size = raw.size
        if (size === null || !(size > 0) || size > longHeaderMaxBytes) return "corrupt"
        this.gathering = { type, size, parts: [], missing: size }
        this.gatheredPadding = padding(size)
        return undefined
      }
    }
    let name = raw.name
    let size = raw.size
    let pax: Record<string, string> | null = null
    if (this.gnuLongPath) name = this.gnuLongPath
    this.gnuLongPath = null
    if (this.pax !== null) {
      pax = this.pax
      this.pax = null
      if (pax.path) name = pax.path
      if (pax.size) size = parseInt(pax.size, 10)
    }
    if (size === null || !(size >= 0)) return "corrupt"
    const verdict = this.onEntry({ name, type, size, pax, byteOffset: this.position })
    // tar-stream passes over a folder's size: the next header follows it directly, whatever the size says.
    if (type === "directory" || size === 0) return verdict === "keep" ? this.onKept(Buffer.alloc(0)) : verdict
    if (verdict === "keep") {
      this.gathering = { type: "keep", size, parts: [], missing: size }
      this.gatheredPadding = padding(size)
      return undefined
    }
    if (verdict !== undefined) return verdict
    this.skip = size + padding(size)
    return undefined
  }

  private gathered(gathering: Gathering): F | undefined {
    const bytes = gathering.parts.length === 1 ? gathering.parts[0] : Buffer.concat(gathering.parts)
    switch (gathering.type) {
      case "keep":
        return this.onKept(bytes)
      case "gnu-long-path":
        this.gnuLongPath = text(bytes, 0, bytes.length, "latin1")
        return undefined
      case "gnu-long-link-path":
        // Link targets: links are refused whatever they point to.
        return undefined
      case "pax-global-header":
        this.paxGlobal = decodePax(bytes)
        return undefined
      case "pax-header":
        this.pax = this.paxGlobal === null ? decodePax(bytes) : { ...this.paxGlobal, ...decodePax(bytes) }
        return undefined
    }
  }
}
