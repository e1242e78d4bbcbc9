import { spawn } from "node:child_process"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { execSmall } from "./SmallSpawner.ts"

export interface GitResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** A scratch folder for one test's clones, removed by `cleanup`. */
export const scratch = async () => {
  const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-git-client-"))
  return { dir, cleanup: () => Fs.rm(dir, { recursive: true, force: true }) }
}

/**
 * The real `git` client, isolated from the machine's configuration (no global or system config, no prompts, no
 * credential helper), with a fixed author. `env` adds variables (`GIT_SSH_COMMAND`, `GIT_PROTOCOL`...). Run by the
 * small spawning helper: git tests run hundreds of these.
 */
export const git = (cwd: string, args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<GitResult> =>
  execSmall("git", ["-c", "credential.helper=", "-c", "protocol.version=2", "-c", "init.defaultBranch=main", ...args], {
    cwd,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_TERMINAL_PROMPT: "0",
      GIT_AUTHOR_NAME: "Test Author",
      GIT_AUTHOR_EMAIL: "author@example.test",
      GIT_COMMITTER_NAME: "Test Author",
      GIT_COMMITTER_EMAIL: "author@example.test",
      ...env
    },
    maxBuffer: 64 * 1024 * 1024
  })

/** Like `git`, failing the test with git's own message when it exits non-zero. */
export const gitOk = async (cwd: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const result = await git(cwd, args, env)
  if (result.code !== 0) throw new Error(`git ${args.join(" ")} failed (${result.code}): ${result.stderr}`)
  return result.stdout.trim()
}

/** An HTTP clone URL with the token as the Basic password (the username is ignored). */
export const withToken = (cloneUrl: string, token: string | undefined, username = "anyone") => {
  if (token === undefined) return cloneUrl
  const url = new URL(cloneUrl)
  url.username = username
  url.password = token
  return url.toString()
}

/** Makes a working copy with one commit per file map, on `branch`. */
export const workingCopy = async (dir: string, files: Record<string, string>, message = "first") => {
  await Fs.mkdir(dir, { recursive: true })
  await gitOk(dir, ["init", "-q"])
  await commitFiles(dir, files, message)
  return dir
}

export const commitFiles = async (dir: string, files: Record<string, string | Uint8Array>, message: string) => {
  for (const [name, content] of Object.entries(files)) {
    await Fs.mkdir(Path.dirname(Path.join(dir, name)), { recursive: true })
    await Fs.writeFile(Path.join(dir, name), content)
  }
  await gitOk(dir, ["add", "-A"])
  await gitOk(dir, ["commit", "-q", "-m", message])
  return gitOk(dir, ["rev-parse", "HEAD"])
}

/**
 * Feeds `stream` to `git fast-import` in `dir` (a repository): thousands of objects or commits in one process, and
 * objects the porcelain will not write (a gitlink to a missing commit, any date git can store).
 */
export const fastImport = (dir: string, stream: Uint8Array): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn("git", ["fast-import", "--quiet"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, GIT_CONFIG_NOSYSTEM: "1" },
      stdio: ["pipe", "ignore", "pipe"]
    })
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.on("error", reject)
    child.on("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`git fast-import failed (${code}): ${stderr}`))
    )
    child.stdin.end(stream)
  })

/** One fast-import `data` command holding `content`. */
export const importData = (content: string | Uint8Array): Buffer => {
  const bytes = typeof content === "string" ? Buffer.from(content) : Buffer.from(content)
  return Buffer.concat([Buffer.from(`data ${bytes.length}\n`), bytes, Buffer.from("\n")])
}
