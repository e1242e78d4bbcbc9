import * as SmallSpawn from "@hostplane/adapters-providers/SmallSpawn"
import * as Fs from "node:fs/promises"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterEach, describe, expect, it } from "vitest"

const dirs: Array<string> = []
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => Fs.rm(dir, { recursive: true, force: true })))
})

const spawned = (child: SmallSpawn.SmallChild) =>
  new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve)
    child.once("error", reject)
  })

const closed = (child: SmallSpawn.SmallChild) =>
  new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)))

const readAll = (stream: NodeJS.ReadableStream) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    stream.on("data", (chunk: Buffer) => chunks.push(chunk))
    stream.once("end", () => resolve(Buffer.concat(chunks)))
    stream.once("error", reject)
  })

// An exited process whose parent has not waited for it yet (a zombie, state Z) counts as gone.
const alive = async (pid: number) => {
  const stat = await Fs.readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined)
  return stat !== undefined && stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
}

const gone = async (pid: number) => {
  while (await alive(pid)) await new Promise((resolve) => setTimeout(resolve, 20))
}

describe("SmallSpawn", () => {
  it("hands back the child's pipes: every byte it writes arrives here, what it is written reaches it", async () => {
    const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-small-spawn-"))
    dirs.push(dir)
    const script = `head -c 3000000 /dev/urandom | tee ${dir}/out; cat > ${dir}/in; printf oops >&2; exit 3`
    const child = SmallSpawn.spawn("sh", ["-c", script], { stdio: ["pipe", "pipe", "collect"] })
    const ended = closed(child)
    await spawned(child)
    expect(child.pid).toBeTypeOf("number")
    const output = readAll(child.stdout!)
    child.stdin!.end("the input")
    expect(await ended).toBe(3)
    expect((await output).equals(await Fs.readFile(`${dir}/out`))).toBe(true)
    expect(await Fs.readFile(`${dir}/in`, "utf8")).toBe("the input")
    expect(child.collected.toString()).toBe("oops")
  })

  it("loses no output of children that exit before their pipes are handed back", async () => {
    const outputs = await Promise.all(
      Array.from({ length: 20 }, async (_, index) => {
        const child = SmallSpawn.spawn("sh", ["-c", `printf out${index}; printf err${index} >&2`])
        const ended = closed(child)
        await spawned(child)
        const [stdout, stderr] = await Promise.all([readAll(child.stdout!), readAll(child.stderr!)])
        await ended
        return `${stdout}/${stderr}`
      })
    )
    expect(outputs).toEqual(Array.from({ length: 20 }, (_, index) => `out${index}/err${index}`))
  })

  it("gives a connection to the child itself, and a file of this process as its stdin", async () => {
    const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-small-spawn-"))
    dirs.push(dir)
    await Fs.writeFile(`${dir}/answer`, "kept answer\n")
    const file = await Fs.open(`${dir}/answer`, "r")
    // Removed after opening: the child still reads what this process holds open.
    await Fs.rm(`${dir}/answer`)
    const server = Net.createServer((socket) => {
      const child = SmallSpawn.spawn("cat", [], { stdio: [file.fd, socket, "ignore"] })
      child.once("close", () => socket.end())
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const client = Net.connect((server.address() as Net.AddressInfo).port, "127.0.0.1")
    expect((await readAll(client)).toString()).toBe("kept answer\n")
    await file.close()
    await new Promise((resolve) => server.close(resolve))
  })

  it("reports a program that does not exist as ENOENT", async () => {
    const child = SmallSpawn.spawn("hostplane-no-such-program", [])
    await expect(spawned(child)).rejects.toMatchObject({ code: "ENOENT" })
    const ran = await SmallSpawn.exec("hostplane-no-such-program", []).result
    expect(ran.error?.code).toBe("ENOENT")
  })

  it("runs execFile with its input, exit code and output", async () => {
    const ran = await SmallSpawn.exec("sh", ["-c", "tr a-z A-Z; echo err >&2; exit 5"], { input: Buffer.from("abc") })
      .result
    expect(ran.error?.code).toBe(5)
    expect(ran.stdout.toString()).toBe("ABC")
    expect(ran.stderr.toString()).toBe("err\n")
  })

  it("stops a detached command's whole process group", async () => {
    const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-small-spawn-"))
    dirs.push(dir)
    const running = SmallSpawn.exec("sh", ["-c", `sleep 300 & echo $! > ${dir}/pid; wait`], { detached: true })
    let pid = ""
    while (pid === "") pid = (await Fs.readFile(`${dir}/pid`, "utf8").catch(() => "")).trim()
    running.kill("SIGKILL", { group: true })
    await running.result
    await gone(Number(pid))
  })

  it("starts the helper again after it died, reporting its children ended and stopping them", async () => {
    const child = SmallSpawn.spawn("sleep", ["300"], { stdio: ["ignore", "ignore", "ignore"] })
    await spawned(child)
    const helper = SmallSpawn.helperPid()!
    const ended = closed(child)
    process.kill(helper, "SIGKILL")
    await ended
    expect(child.signalCode).toBe("SIGKILL")
    await gone(child.pid!)
    const ran = await SmallSpawn.exec("sh", ["-c", "echo again"]).result
    expect(ran.stdout.toString()).toBe("again\n")
    expect(SmallSpawn.helperPid()).not.toBe(helper)
  })
})
