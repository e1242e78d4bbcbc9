import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { spliceConnection } from "../../src/edge/ByteLane.ts"
import type * as Edge from "../../src/edge/Edge.ts"
import type { SpliceCall, WorkerSplice } from "../../src/edge/WorkerInvoker.ts"

/**
 * The byte lane on its own on a loopback port, in front of a stand-in worker socket served by `serveWorker`: every
 * request the lane takes goes to that socket as one hot invocation, whose ends are collected in `ended`. A connection
 * the lane hands over goes to `handOver` (destroyed without one).
 */
export const standInLane = async (options: {
  readonly prefix: string
  readonly keepAliveMs: number
  readonly serveWorker: (socket: Net.Socket) => void
  readonly handOver?: (socket: Net.Socket) => void
}) => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), options.prefix))
  const socketPath = Path.join(dir, "worker.sock")
  const worker = Net.createServer(options.serveWorker)
  await new Promise<void>((resolve) => worker.listen(socketPath, resolve))
  const ended: Array<unknown> = []
  const splice: WorkerSplice = {
    call: (_target, request): SpliceCall => ({
      socket: socketPath,
      hot: true,
      head: `GET ${request.target} HTTP/1.1\r\nhost: worker\r\n\r\n`,
      invocation: { id: "one", end: (end) => void ended.push(end) },
      done: () => {}
    }),
    answerOf: () => undefined,
    refuse: () => ({ status: 503, headers: {}, body: "" }),
    deadline: () => () => {}
  }
  const target = { projectId: "prj_1", deploymentId: "dep_1" } as unknown as Edge.WorkerTarget
  const lane = Net.createServer((socket) => {
    spliceConnection(
      socket,
      { workerOf: () => target, splice, answered: () => {}, keepAliveMs: () => options.keepAliveMs },
      () => (options.handOver === undefined ? socket.destroy() : options.handOver(socket)),
      () => {}
    )
  })
  await new Promise<void>((resolve) => lane.listen(0, "127.0.0.1", resolve))
  return {
    ended,
    port: (lane.address() as Net.AddressInfo).port,
    close: () => {
      lane.close()
      worker.close()
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}
