/** One server-sent event as read off the wire: its `id` and `data` lines, or a comment. */
export interface Frame {
  readonly id?: string
  readonly data?: string
  readonly comment?: string
}

export interface OpenStream {
  readonly status: number
  readonly headers: Headers
  readonly frames: ReadonlyArray<Frame>
  /** The parsed `data` of every event frame so far. */
  readonly events: () => ReadonlyArray<any>
  /** Waits until `done(frames)` holds; fails after `ms` with what was read. */
  readonly until: (done: (frames: ReadonlyArray<Frame>) => boolean, ms?: number) => Promise<void>
  readonly close: () => void
  /** The body when the answer is not a stream (an error envelope). */
  readonly body: () => Promise<any>
}

const parse = (block: string): Frame => {
  const frame: { id?: string; data?: string; comment?: string } = {}
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) frame.comment = line.slice(1).trim()
    else if (line.startsWith("id: ")) frame.id = line.slice(4)
    else if (line.startsWith("data: "))
      frame.data = frame.data === undefined ? line.slice(6) : `${frame.data}\n${line.slice(6)}`
  }
  return frame
}

/** Opens `url` as `fetch` does in a browser (bearer token, optional `Last-Event-ID`) and reads frames as they come. */
export const openStream = async (
  url: string,
  options: { readonly token?: string | undefined; readonly lastEventId?: string | undefined } = {}
): Promise<OpenStream> => {
  const abort = new AbortController()
  const headers: Record<string, string> = { accept: "text/event-stream" }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  if (options.lastEventId !== undefined) headers["last-event-id"] = options.lastEventId
  const response = await fetch(url, { headers, signal: abort.signal })
  const frames: Array<Frame> = []
  const waiters = new Set<() => void>()
  let ended = false
  const streaming = response.ok && (response.headers.get("content-type") ?? "").startsWith("text/event-stream")
  if (streaming && response.body !== null) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    void (async () => {
      let buffer = ""
      try {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) break
          buffer += value
          for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
            frames.push(parse(buffer.slice(0, end)))
            buffer = buffer.slice(end + 2)
          }
          for (const wake of waiters) wake()
        }
      } catch {
        // Aborted by close().
      } finally {
        ended = true
        for (const wake of waiters) wake()
      }
    })()
  }
  return {
    status: response.status,
    headers: response.headers,
    frames,
    events: () => frames.filter((frame) => frame.data !== undefined).map((frame) => JSON.parse(frame.data!)),
    until: (done, ms = 20_000) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (done(frames)) {
            cleanup()
            resolve()
          } else if (ended) {
            cleanup()
            reject(new Error(`stream ended before the condition held: ${JSON.stringify(frames)}`))
          }
        }
        const timer = setTimeout(() => {
          cleanup()
          reject(new Error(`condition not met in ${ms} ms: ${JSON.stringify(frames)}`))
        }, ms)
        const cleanup = () => {
          clearTimeout(timer)
          waiters.delete(check)
        }
        waiters.add(check)
        check()
      }),
    close: () => abort.abort(),
    body: async () => (streaming ? undefined : response.json())
  }
}
