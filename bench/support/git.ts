// What the git benches (bench/git.ts, bench/git-ab.ts) share: the git runner, the source repository of random
// content, the SSH key, and a hostplane server set up to serve that repository over smart HTTP and SSH.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type Hostplane, request, startProcess, waitFor } from "./harness.ts"

const MiB = 1024 * 1024

/** Runs git with no system or user configuration and no credential helper; its stdout, trimmed. */
export const git = (cwd: string, args: Array<string>, env: Record<string, string> = {}) =>
  new Promise<string>((resolve, reject) =>
    execFile(
      "git",
      ["-c", "credential.helper=", ...args],
      {
        cwd,
        maxBuffer: 16 * MiB,
        env: {
          PATH: process.env.PATH,
          HOME: cwd,
          GIT_CONFIG_NOSYSTEM: "1",
          GIT_TERMINAL_PROMPT: "0",
          GIT_AUTHOR_NAME: "Bench",
          GIT_AUTHOR_EMAIL: "bench@example.test",
          GIT_COMMITTER_NAME: "Bench",
          GIT_COMMITTER_EMAIL: "bench@example.test",
          ...env
        }
      },
      (error, stdout, stderr) =>
        error === null ? resolve(stdout.trim()) : reject(new Error(`git ${args.join(" ")}: ${stderr}`))
    )
  )

const json = async (method: string, url: string, token: string, body?: unknown) => {
  const reply = await request(
    method,
    url,
    { "content-type": "application/json", authorization: `Bearer ${token}` },
    body === undefined ? undefined : JSON.stringify(body),
    10_000
  )
  if (reply.status >= 300) throw new Error(`${method} ${url}: ${reply.status} ${reply.body.toString("utf8")}`)
  return JSON.parse(reply.body.toString("utf8")) as Record<string, any>
}

/**
 * A repository at `<dir>/source` with one commit of `sizeMiB` files of 1 MiB of random (incompressible) bytes, packed:
 * its pack is about the content's size. Answers its path and the pack's bytes.
 */
export const sourceRepository = async (dir: string, sizeMiB: number) => {
  const source = Path.join(dir, "source")
  Fs.mkdirSync(source)
  await git(source, ["init", "-q", "-b", "main"])
  for (let i = 0; i < sizeMiB; i++) Fs.writeFileSync(Path.join(source, `blob-${i}.bin`), randomBytes(MiB))
  await git(source, ["add", "-A"])
  await git(source, ["commit", "-q", "-m", "content"])
  await git(source, ["gc", "-q"])
  const packs = Path.join(source, ".git", "objects", "pack")
  const packBytes = Fs.readdirSync(packs)
    .filter((name) => name.endsWith(".pack"))
    .reduce((sum, name) => sum + Fs.statSync(Path.join(packs, name)).size, 0)
  return { source, packBytes }
}

/** A fresh ed25519 key at `<dir>/id_ed25519`, and the environment that makes git's ssh use it (and trust any host). */
export const sshKey = async (dir: string) => {
  const keyFile = Path.join(dir, "id_ed25519")
  await new Promise<void>((resolve, reject) =>
    execFile("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keyFile], (error) =>
      error === null ? resolve() : reject(error)
    )
  )
  const sshEnv = {
    GIT_SSH_COMMAND: `ssh -i ${keyFile} -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR`
  }
  return { keyFile, sshEnv }
}

/**
 * Sets up a running hostplane to serve `source`: the bench user's org gets a project `bench` with a repo `big`, a
 * personal access token for smart HTTP and the key for SSH, and `main` is pushed over smart HTTP. Answers the clone
 * URLs (HTTP with the token in it) and the repo's own `cloneUrl`.
 */
export const serveRepository = async (server: Hostplane, source: string, keyFile: string) => {
  const { base, token, sshPort } = server
  const me = await json("GET", `${base}/v1/me`, token)
  const slug = me.orgs[0].slug as string
  await json("POST", `${base}/v1/orgs/${slug}/projects`, token, { name: "bench" })
  const repo = await json("POST", `${base}/v1/orgs/${slug}/projects/bench/repos`, token, { name: "big" })
  const pat = (await json("POST", `${base}/v1/me/tokens`, token, { name: "bench" })).token as string
  await json("POST", `${base}/v1/me/ssh-keys`, token, { publicKey: Fs.readFileSync(`${keyFile}.pub`, "utf8") })
  const httpUrl = new URL(`${base}/git/${slug}/bench/big.git`)
  httpUrl.username = "bench"
  httpUrl.password = pat
  await git(source, ["push", "-q", httpUrl.toString(), "main"])
  return {
    http: httpUrl.toString(),
    ssh: `ssh://git@127.0.0.1:${sshPort}/${slug}/bench/big.git`,
    cloneUrl: repo.cloneUrl as string
  }
}

/** Debian's OpenSSH server, the peer an operator would otherwise run for SSH git: absent when not installed. */
export const sshdPath = ["/usr/sbin/sshd", "/usr/local/sbin/sshd"].find((path) => Fs.existsSync(path))

/**
 * Starts OpenSSH's `sshd` on a free loopback port with a host key made for the run, accepting only `keyFile`'s public
 * key and running nothing but `git-shell` (so a login can only fetch or push, as hostplane's SSH allows). `repository`
 * is served at `ssh://<user>@127.0.0.1:<port><repository>`. Answers the clone URL and the listener's pid (its reaped
 * children carry the per-connection sshd and git CPU); the run's cleanup stops it.
 */
export const startOpenSsh = async (dir: string, keyFile: string, repository: string, port: number) => {
  if (sshdPath === undefined) throw new Error("OpenSSH's sshd is not installed (Debian package openssh-server)")
  const home = Path.join(dir, "openssh")
  Fs.mkdirSync(home)
  const hostKey = Path.join(home, "host_ed25519")
  await new Promise<void>((resolve, reject) =>
    execFile("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", hostKey], (error) =>
      error === null ? resolve() : reject(error)
    )
  )
  Fs.copyFileSync(`${keyFile}.pub`, Path.join(home, "authorized_keys"))
  // sshd checks that its privilege separation directory exists before it reads anything else.
  if (!Fs.existsSync("/run/sshd")) Fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 })
  const config = Path.join(home, "sshd_config")
  Fs.writeFileSync(
    config,
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${hostKey}`,
      `PidFile ${Path.join(home, "sshd.pid")}`,
      `AuthorizedKeysFile ${Path.join(home, "authorized_keys")}`,
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "UsePAM no",
      // The run's files live in a temp dir whose modes sshd's owner checks would refuse.
      "StrictModes no",
      "PermitRootLogin prohibit-password",
      "AllowTcpForwarding no",
      "X11Forwarding no",
      "PermitTTY no",
      'ForceCommand git-shell -c "$SSH_ORIGINAL_COMMAND"',
      // ForceCommand runs through the user's shell, and Debian's bash reads ~/.bashrc when sshd starts it at shell
      // level 1: a developer's rc (pyenv's init here) cost seconds per clone, where an operator's git user has no
      // such shell. Starting it at level 2 skips the rc.
      "SetEnv SHLVL=1",
      ""
    ].join("\n")
  )
  const logFile = Path.join(home, "sshd.log")
  const child = startProcess("sshd", sshdPath, ["-D", "-e", "-f", config], {}, logFile)
  await waitFor(child, 10_000, async () =>
    Fs.readFileSync(logFile, "utf8").includes("Server listening") ? true : undefined
  )
  return { url: `ssh://${Os.userInfo().username}@127.0.0.1:${port}${repository}`, pid: child.pid }
}

/** The cipher the client's ssh and the server at `url` agree on (`ssh -v`'s kex line), to print beside the figures. */
export const negotiatedCipher = (url: string, env: Record<string, string>) =>
  new Promise<string>((resolve) => {
    const target = new URL(url)
    const command = env.GIT_SSH_COMMAND ?? "ssh"
    execFile(
      "sh",
      [
        "-c",
        `${command} -v -p ${target.port} ${target.username}@${target.hostname} git-upload-pack '${target.pathname}' </dev/null`
      ],
      { timeout: 10_000 },
      (_error, _stdout, stderr) => resolve(/kex: server->client cipher: (\S+)/.exec(stderr)?.[1] ?? "unknown")
    )
  })
