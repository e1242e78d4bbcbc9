import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A certificate authority made for one test, and what it signs. */
export interface TestAuthority {
  /** The CA's own certificate (PEM), what a client trusts. */
  readonly root: string
  /** A leaf for `names` (ECDSA P-256; an IPv4 address becomes an IP entry), its chain (leaf then CA) and key as PEM. */
  readonly issue: (names: ReadonlyArray<string>, days?: number) => { readonly chain: string; readonly key: string }
}

const openssl = (dir: string, args: ReadonlyArray<string>) =>
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] })

/** A throwaway CA through the `openssl` binary: real X.509, as the edge reads from `SERVICE_TLS_CERT_FILE`. */
export const testAuthority = (): TestAuthority => {
  const dir = mkdtempSync(join(tmpdir(), "hostplane-ca-"))
  try {
    openssl(dir, ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"])
    openssl(dir, [
      "req",
      "-x509",
      "-new",
      "-key",
      "ca.key",
      "-days",
      "30",
      "-subj",
      "/CN=hostplane test CA",
      "-out",
      "ca.pem"
    ])
    const root = readFileSync(join(dir, "ca.pem"), "utf8")
    const caKey = readFileSync(join(dir, "ca.key"), "utf8")
    rmSync(dir, { recursive: true, force: true })
    let serial = 1
    const issue = (names: ReadonlyArray<string>, days = 30) => {
      const work = mkdtempSync(join(tmpdir(), "hostplane-leaf-"))
      try {
        writeFileSync(join(work, "ca.pem"), root)
        writeFileSync(join(work, "ca.key"), caKey)
        writeFileSync(
          join(work, "ext.cnf"),
          `subjectAltName=${names.map((name) => (/^[\d.]+$/.test(name) ? `IP:${name}` : `DNS:${name}`)).join(",")}\n`
        )
        openssl(work, ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "leaf.key"])
        openssl(work, ["req", "-new", "-key", "leaf.key", "-subj", `/CN=${names[0]}`, "-out", "leaf.csr"])
        openssl(work, [
          "x509",
          "-req",
          "-in",
          "leaf.csr",
          "-CA",
          "ca.pem",
          "-CAkey",
          "ca.key",
          "-set_serial",
          String(serial++),
          "-days",
          String(days),
          "-extfile",
          "ext.cnf",
          "-out",
          "leaf.pem"
        ])
        return {
          chain: readFileSync(join(work, "leaf.pem"), "utf8") + root,
          key: readFileSync(join(work, "leaf.key"), "utf8")
        }
      } finally {
        rmSync(work, { recursive: true, force: true })
      }
    }
    return { root, issue }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
}
