import type * as Edge from "./Edge.ts"
import { STATUS_CODES } from "node:http"
import * as Net from "node:net"
import { ChunkedEnd, type Framing, type RequestHead, scanRequestHead, scanResponseHead } from "./HttpHead.ts"
import type { SpliceCall, SpliceRefusal, SpliceRequest, WorkerSplice } from "./WorkerInvoker.ts"

/** What the byte lane asks of the edge's lane for each request head (`EdgeLane.ts`). */
export interface ByteLaneDeps {
  /**
   * The worker a request goes to, by the edge's rules and the lane's remembered answers; `undefined` when it is not a
   * worker's (a file, a refusal, the service's own paths): node's HTTP server then serves the connection.
   */
  readonly workerOf: (
    head: RequestHead,
    client: string | undefined
  ) => Edge.WorkerTarget | undefined | Promise<Edge.WorkerTarget | undefined>
  readonly splice: WorkerSplice
  /** The edge's line and count of a request the lane answered. */
  readonly answered: (head: RequestHead, status: number, started: number) => void
  /** Idle time of a kept-alive connection, as node's server keeps it (`keepAliveTimeout`). */
  readonly keepAliveMs: () => number
}

/** What the byte lane did in this process: requests it forwarded, connections it handed to node's HTTP server. */
export const byteLaneCounts = { requests: 0, handedOver: 0 }

/** How long a request head may stay incomplete before the connection is node's (whose header timeout then runs). */
const partialHeadMs = 1_000

/** Client bytes held while a response is in flight before the lane stops reading the connection. */
const maxBuffered = 64 * 1024

/** `Date` of a response, made once per second as node's server makes it. */
let dateText = ""
let dateSecond = -1
const dateNow = () => {
  const now = Date.now()
  const second = Math.floor(now / 1000)
  if (second !== dateSecond) {
    dateSecond = second
    dateText = new Date(second * 1000).toUTCString()
  }
  return dateText
}

/** Each status's line, made once. */
const statusLines: Array<string | undefined> = []
const statusLineOf = (status: number): string =>
  (statusLines[status] ??= `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "unknown"}\r\n`)

/** Response headers of one connection: the lane writes the client's own. */
const connectionHeaders = new Set(["connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"])

const ignore = () => {}

const empty = Buffer.alloc(0)

/**
 * What every upstream connection of the lane reads into (`onread`): no buffer allocated per read. Its bytes are valid
 * only while the read's callback runs, so whatever outlives it is copied (a partial head, each body part written).
 */
const readBuffer = Buffer.allocUnsafe(64 * 1024)

/**
 * What every client connection of the lane reads into while the lane serves it, as the upstreams read into
 * `readBuffer`: node's own HTTP server reads its connections below the stream too (its parser consumes the socket).
 */
const clientReadBuffer = Buffer.allocUnsafe(64 * 1024)

/**
 * Node's per-socket fields behind `net.connect`'s `onread` option (the buffer and its callback), read off a socket
 * made with that option: a server's accepted socket takes no such option, so the lane sets them on it, and has its
 * handle read into the buffer. `undefined` on a Node that keeps them otherwise: the lane then reads `data` events.
 */
const onreadFields = (() => {
  const probe = new Net.Socket({ onread: { buffer: Buffer.alloc(1), callback: () => true } })
  const symbols = Object.getOwnPropertySymbols(probe)
  const buffer = symbols.find((symbol) => symbol.description === "kBuffer")
  const callback = symbols.find((symbol) => symbol.description === "kBufferCb")
  probe.destroy()
  return buffer !== undefined && callback !== undefined ? { buffer, callback } : undefined
})()

/**
 * Has `socket`'s reads call `read` with their bytes in `clientReadBuffer`, valid only until it returns (`false` stops
 * reading until the stream is resumed); whether it could (a socket whose handle is not a stream of node's own cannot:
 * it keeps its `data` events).
 */
const readBelowStream = (socket: Net.Socket, read: (bytes: Buffer) => boolean): boolean => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const fields = socket as any
  const handle = fields._handle
  if (onreadFields === undefined || typeof handle?.useUserBuffer !== "function" || fields[onreadFields.buffer]) {
    return false
  }
  fields[onreadFields.buffer] = clientReadBuffer
  fields[onreadFields.callback] = (length: number) => read(clientReadBuffer.subarray(0, length))
  handle.useUserBuffer(clientReadBuffer)
  return true
}

/** A copy of `bytes` (from the pool when small, as `Buffer.from` does). */
const copyOf = (bytes: Buffer): Buffer => {
  const out = Buffer.allocUnsafe(bytes.length)
  bytes.copy(out)
  return out
}

/** A response head (latin1 text) and the first bytes of its body in one buffer: one write, one copy of each. */
const withHead = (head: string, body: Buffer): Buffer => {
  const out = Buffer.allocUnsafe(head.length + body.length)
  out.write(head, 0, "latin1")
  body.copy(out, head.length)
  return out
}

/** One connection the byte lane serves until it hands it to node's HTTP server or it closes. */
export interface SplicedConnection {
  /** Closes the connection now when no request is in flight, else once its response ends. */
  readonly closeWhenIdle: () => void
  /** Closes the connection when no request is in flight. */
  readonly closeIfIdle: () => void
  readonly destroy: () => void
}

/**
 * Serves a plain-HTTP connection's bodiless worker requests by copying bytes (see docs/node.md, "The byte lane"):
 * each request head is scanned strictly; one the lane takes is rewritten as the edge rewrites every worker request
 * and written to one upstream connection to the worker's socket, and the response is copied back once its head is
 * scanned and rewritten, until its framing says it ended. The first request the lane does not take, with nothing in
 * flight, hands the connection to node's HTTP server (`next`) with every byte not yet consumed put back: it never
 * comes back.
 */
export const spliceConnection = (
  socket: Net.Socket,
  deps: ByteLaneDeps,
  next: () => void,
  closed: () => void
): SplicedConnection => {
  let buffer: Buffer = Buffer.alloc(0)
  /** A request is being decided or forwarded: later bytes wait in `buffer`. */
  let busy = false
  let gone = false
  let closing = false
  let clientEnded = false
  let partialTimer: ReturnType<typeof setTimeout> | undefined
  let upstream: Net.Socket | undefined
  let upstreamPath: string | undefined

  const finish = () => {
    if (gone) return
    gone = true
    if (partialTimer !== undefined) clearTimeout(partialTimer)
    if (!below) socket.off("data", onData)
    socket.off("end", onEnd)
    socket.off("close", onClose)
    socket.off("error", onClose)
    socket.off("timeout", onIdle)
    socket.setTimeout(0)
    closed()
  }

  const dropUpstream = () => {
    upstream?.destroy()
    upstream = undefined
    upstreamPath = undefined
  }

  /** Closes the connection at once; a request in flight is canceled. */
  const destroy = () => {
    cancel()
    dropUpstream()
    finish()
    socket.on("error", ignore)
    socket.destroy()
  }

  /** Closes the connection once what was written to it is sent. */
  const close = () => {
    cancel()
    dropUpstream()
    finish()
    socket.on("error", ignore)
    socket.destroySoon()
  }

  /** The connection is node's from here: every byte not consumed is put back in front of what comes next. */
  const handOver = () => {
    if (gone) return
    // A client that ended its side sends nothing more: node's server could not be given its bytes back.
    if (clientEnded) return close()
    dropUpstream()
    socket.pause()
    finish()
    byteLaneCounts.handedOver++
    if (buffer.length > 0) socket.unshift(buffer.buffer === clientReadBuffer.buffer ? copyOf(buffer) : buffer)
    buffer = Buffer.alloc(0)
    next()
    socket.resume()
  }

  const onData = (chunk: Buffer) => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk])
    if (busy) {
      if (buffer.length > maxBuffered) socket.pause()
      return
    }
    process()
  }
  /**
   * A read into the shared client buffer: the same as a `data` event, and what is still unconsumed once it is
   * handled (a partial head, a pipelined request) is copied out of it. Once the connection is node's, each read is
   * given to its stream as a `data` event would be (node's server reads its connections below the stream itself; a
   * connection it leaves, an upgraded one, is read this way).
   */
  const onRead = (bytes: Buffer): boolean => {
    if (gone) return socket.push(copyOf(bytes))
    onData(bytes)
    if (buffer.length > 0 && buffer.buffer === clientReadBuffer.buffer) buffer = copyOf(buffer)
    return true
  }
  const onEnd = () => {
    clientEnded = true
    if (!busy) close()
  }
  const onClose = () => destroy()
  // The idle timer stays armed while the lane serves: each read and write restarts it, so it fires only after
  // `keepAliveMs` without either; a request in flight or a head still coming (its own timer) ignores it.
  const onIdle = () => {
    if (!busy && buffer.length === 0) destroy()
  }
  let idleMs = -1
  const armIdle = () => {
    const ms = deps.keepAliveMs()
    if (ms === idleMs) return
    idleMs = ms
    socket.setTimeout(ms)
  }

  /** Takes the next request head in `buffer`, when nothing is in flight. */
  const process = () => {
    if (gone || busy) return
    if (partialTimer !== undefined) {
      clearTimeout(partialTimer)
      partialTimer = undefined
    }
    if (closing || (clientEnded && buffer.length === 0)) return close()
    if (buffer.length === 0) return armIdle()
    const head = scanRequestHead(buffer)
    if (head === null) return handOver()
    if (head === undefined) {
      partialTimer = setTimeout(handOver, partialHeadMs)
      return
    }
    const started = Date.now()
    const client = socket.remoteAddress
    const decided = deps.workerOf(head, client)
    if (decided instanceof Promise) {
      busy = true
      socket.pause()
      decided.then(
        (target) => {
          busy = false
          if (gone) return
          socket.resume()
          if (target === undefined) return handOver()
          begin(head, target, client, started)
        },
        () => {
          busy = false
          if (gone) return
          socket.resume()
          handOver()
        }
      )
      return
    }
    if (decided === undefined) return handOver()
    begin(head, decided, client, started)
  }

  const begin = (head: RequestHead, target: Edge.WorkerTarget, client: string | undefined, started: number) => {
    const request: SpliceRequest = { method: head.method, target: head.target, headers: head.headers, client }
    const call = deps.splice.call(target, request)
    if (!(call instanceof Promise)) return commit(head, target, request, call, started)
    busy = true
    socket.pause()
    call.then(
      (ready) => {
        busy = false
        if (gone) {
          if (ready !== undefined) {
            ready.invocation.end({ outcome: "canceled", status: null })
            ready.done()
          }
          return
        }
        socket.resume()
        commit(head, target, request, ready, started)
      },
      () => {
        busy = false
        if (gone) return
        socket.resume()
        handOver()
      }
    )
  }

  const commit = (
    head: RequestHead,
    target: Edge.WorkerTarget,
    request: SpliceRequest,
    call: SpliceCall | undefined,
    started: number
  ) => {
    if (call === undefined) return handOver()
    buffer = buffer.subarray(head.length)
    busy = true
    byteLaneCounts.requests++
    forward(head, target, request, call, started, false)
  }

  /** Ends the request in flight; the next one in `buffer` is taken. */
  const settled = () => {
    busy = false
    if (gone) return
    if (socket.isPaused()) socket.resume()
    process()
  }

  const writeRefusal = (refused: SpliceRefusal) => {
    let text = statusLineOf(refused.status)
    for (const name in refused.headers) text += `${name}: ${refused.headers[name]}\r\n`
    text += `content-length: ${Buffer.byteLength(refused.body)}\r\ndate: ${dateNow()}\r\n${keepAlive()}\r\n`
    socket.write(text + refused.body)
  }

  let keepAliveMs = -1
  let keepAliveText = ""
  /** The keep-alive headers, made again only when the listener's keep-alive time changed. */
  const keepAlive = () => {
    const ms = deps.keepAliveMs()
    if (ms !== keepAliveMs) {
      keepAliveMs = ms
      keepAliveText = `connection: keep-alive\r\nkeep-alive: timeout=${Math.floor(ms / 1000)}\r\n`
    }
    return keepAliveText
  }

  // The request in flight to the upstream (one at a time on a connection): its state lives here, reset by `forward`,
  // and the upstream's listeners are added once per upstream connection, so a request makes no closures and adds no
  // listeners of its own.
  /** No request is forwarded, or its end was settled: late events of its upstream are ignored. */
  let over = true
  let xHead!: RequestHead
  let xTarget!: Edge.WorkerTarget
  let xRequest!: SpliceRequest
  let xCall!: SpliceCall
  let xStarted = 0
  let xRetried = false
  /** Whether the request went out on a kept-alive upstream connection. */
  let xReused = false
  let to!: Net.Socket
  let response: Buffer = empty
  /** The response's status once its head was written to the client. */
  let status: number | undefined
  let framing: Framing | undefined
  let remaining = 0
  let chunked: ChunkedEnd | undefined
  let closeAfter = false
  let clearDeadline: () => void = ignore

  const end = (keepUpstream: boolean) => {
    if (over) return
    over = true
    clearDeadline()
    clearDeadline = ignore
    if (waitingDrain) {
      waitingDrain = false
      socket.off("drain", onClientDrain)
    }
    xCall.done()
    if (!keepUpstream && upstream === to) dropUpstream()
    else if (!keepUpstream) to.destroy()
  }
  const refuse = (refused: SpliceRefusal) => {
    end(false)
    writeRefusal(refused)
    deps.answered(xHead, refused.status, xStarted)
    settled()
  }
  // The worker's time starts once it has the whole request: a bodiless request is whole once written.
  const onDeadline = () => {
    clearDeadline = ignore
    refuse(deps.splice.refuse(xCall, "timeout"))
  }
  const failed = () => {
    if (over) return
    if (status !== undefined) {
      // The socket went away in the middle of the worker's answer: the client's response is cut too.
      xCall.invocation.end({ outcome: "canceled", status })
      end(false)
      destroy()
      return
    }
    if (!xRetried && response.length === 0 && (xReused || xCall.hot)) {
      // A kept-alive connection the worker's process closed as the request went out, or a hot process that died
      // under it: a read is asked once more (of the loader shard, after the hot process), as serveNode does.
      const call = xCall
      end(false)
      const again = deps.splice.call(xTarget, xRequest, { invocation: call.invocation, loaderOnly: call.hot })
      if (again === undefined) return refuse(deps.splice.refuse(call, "unavailable"))
      if (!(again instanceof Promise)) return forward(xHead, xTarget, xRequest, again, xStarted, true)
      // Its shard is not up either (the runtime is stopping, or restarting it): answered now, not after a wait.
      void again.then((ready) => ready?.done(), ignore)
      return refuse(deps.splice.refuse(call, "unavailable"))
    }
    refuse(deps.splice.refuse(xCall, "unavailable"))
  }
  const onUpstreamEnd = (from: Net.Socket) => {
    if (over || from !== to) return
    if (status !== undefined && framing?._tag === "Close") {
      xCall.invocation.end({ outcome: "ok", status })
      end(false)
      closing = true
      settled()
      return
    }
    failed()
  }
  let waitingDrain = false
  const onClientDrain = () => {
    waitingDrain = false
    if (!over) to.resume()
  }
  /**
   * Copies body bytes to the client (copied out of the shared read buffer); answers whether the body ended (the rest
   * of `chunk` is not the response's).
   */
  const body = (chunk: Buffer, prefix: string | undefined): boolean => {
    let ended = false
    let part = chunk
    if (framing!._tag === "None") {
      ended = true
      part = chunk.subarray(0, 0)
    } else if (framing!._tag === "Length") {
      if (part.length >= remaining) {
        part = part.subarray(0, remaining)
        ended = true
      }
      remaining -= part.length
    } else if (framing!._tag === "Chunked") {
      const at = chunked!.feed(part)
      if (at === -2) {
        if (prefix !== undefined) socket.write(prefix, "latin1")
        xCall.invocation.end({ outcome: "canceled", status: status! })
        end(false)
        destroy()
        return true
      }
      if (at >= 0) {
        part = part.subarray(0, at)
        ended = true
      }
    }
    const flushed =
      prefix === undefined ? part.length === 0 || socket.write(copyOf(part)) : socket.write(withHead(prefix, part))
    if (ended) {
      if (part.length < chunk.length) closeAfter = true
      xCall.invocation.end({ outcome: "ok", status: status! })
      end(!closeAfter)
      settled()
      return true
    }
    if (!flushed && !waitingDrain) {
      // Backpressure from the client: the worker's body waits until the client's socket drains.
      to.pause()
      waitingDrain = true
      socket.once("drain", onClientDrain)
    }
    return false
  }
  /** Bytes read from `from` into the shared read buffer: valid only until this returns. */
  const onUpstreamData = (from: Net.Socket, chunk: Buffer) => {
    if (over || from !== to) return
    if (status !== undefined) {
      body(chunk, undefined)
      return
    }
    response = response.length === 0 ? chunk : Buffer.concat([response, chunk])
    const scanned = scanResponseHead(response, xHead.method)
    if (scanned === undefined) {
      // The head goes on in a later read: what came so far is kept out of the shared buffer.
      if (response === chunk) response = copyOf(chunk)
      return
    }
    if (scanned === null) return refuse(deps.splice.refuse(xCall, "unavailable"))
    clearDeadline()
    clearDeadline = ignore
    const refused = deps.splice.answerOf(xCall, scanned.status, scanned.headers)
    if (refused !== undefined) return refuse(refused)
    status = scanned.status
    framing = scanned.framing
    const connection = scanned.headers.connection
    closeAfter = connection !== undefined && /(^|,)\s*close\s*(,|$)/i.test(String(connection))
    let text = statusLineOf(status)
    for (const [name, value] of scanned.lines) {
      if (connectionHeaders.has(name.toLowerCase())) continue
      text += `${name}: ${value}\r\n`
    }
    if (scanned.headers.date === undefined) text += `date: ${dateNow()}\r\n`
    if (framing._tag === "Chunked") {
      chunked = new ChunkedEnd()
      text += "transfer-encoding: chunked\r\n"
    } else if (framing._tag === "Length") remaining = framing.length
    if (framing._tag === "Close" || closing) {
      closing = true
      text += "connection: close\r\n\r\n"
    } else text += `${keepAlive()}\r\n`
    deps.answered(xHead, status, xStarted)
    const rest = response.subarray(scanned.length)
    response = empty
    body(rest, text)
  }

  /** An upstream connection to a worker's socket: read into the shared buffer, its events passed to the request. */
  const connect = (path: string): Net.Socket => {
    const made: Net.Socket = Net.connect({
      path,
      onread: {
        buffer: readBuffer,
        callback: (length) => {
          onUpstreamData(made, readBuffer.subarray(0, length))
          return true
        }
      }
    })
    // Errors are seen by the request in flight; one on an idle connection only means it is not reused.
    made.on("error", () => onUpstreamEnd(made))
    made.on("end", () => onUpstreamEnd(made))
    made.on("close", () => onUpstreamEnd(made))
    return made
  }

  /** Cancels the request in flight: the client went away, and the worker's request is canceled too. */
  const cancel = () => {
    if (over) return
    if (status !== undefined) xCall.invocation.end({ outcome: "canceled", status })
    else {
      xCall.invocation.end({ outcome: "canceled", status: null })
      deps.answered(xHead, 499, xStarted)
    }
    end(false)
  }

  const forward = (
    head: RequestHead,
    target: Edge.WorkerTarget,
    request: SpliceRequest,
    call: SpliceCall,
    started: number,
    retried: boolean
  ) => {
    let reused = true
    if (upstream === undefined || upstreamPath !== call.socket || upstream.destroyed) {
      dropUpstream()
      upstream = connect(call.socket)
      upstreamPath = call.socket
      reused = false
    }
    to = upstream
    if (to.isPaused()) to.resume()
    over = false
    xHead = head
    xTarget = target
    xRequest = request
    xCall = call
    xStarted = started
    xRetried = retried
    xReused = reused
    response = empty
    status = undefined
    framing = undefined
    remaining = 0
    chunked = undefined
    closeAfter = false
    clearDeadline = deps.splice.deadline(onDeadline)
    to.write(call.head, "latin1")
  }

  const below = readBelowStream(socket, onRead)
  if (!below) socket.on("data", onData)
  socket.on("end", onEnd)
  socket.on("close", onClose)
  socket.on("error", onClose)
  socket.on("timeout", onIdle)
  // A connection that sends nothing at all is closed after the same time (node's server never sees it).
  armIdle()

  return {
    closeWhenIdle: () => {
      closing = true
      if (!busy) close()
    },
    closeIfIdle: () => {
      if (!busy) close()
    },
    destroy
  }
}
