import { describe, expect, it } from "vitest"
import { execFileSync } from "node:child_process"
import { X509Certificate } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll } from "vitest"
import * as Certificates from "../src/database/Certificates.ts"

const folder = mkdtempSync(Path.join(Os.tmpdir(), "hostplane-certificates-"))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

/** OpenSSL's own verdict, strict RFC 5280 checks on, for a TLS server at `ip`. */
const opensslVerify = (authority: string, server: string, ip: string) => {
  writeFileSync(Path.join(folder, "ca.crt"), authority)
  writeFileSync(Path.join(folder, "server.crt"), server)
  try {
    execFileSync(
      "openssl",
      ["verify", "-x509_strict", "-purpose", "sslserver", "-verify_ip", ip, "-CAfile", "ca.crt", "server.crt"],
      { cwd: folder, stdio: "pipe" }
    )
    return true
  } catch {
    return false
  }
}

describe("the node's certificates (node:crypto only)", () => {
  const authority = Certificates.makeAuthority("hostplane database node CA")
  const hosts = ["127.0.0.1", "localhost", "db.example.test", "::1"]
  const server = Certificates.issueServer(authority, "prj_one", hosts)

  it("a server certificate passes OpenSSL's strict verification for its addresses, and no other", () => {
    expect(opensslVerify(authority.certificate, server.certificate, "127.0.0.1")).toBe(true)
    expect(opensslVerify(authority.certificate, server.certificate, "10.1.2.3")).toBe(false)
    expect(opensslVerify(Certificates.makeAuthority("other").certificate, server.certificate, "127.0.0.1")).toBe(false)
  })

  it("names every host as a subject alternative name; the authority is a CA, the server certificate is not", () => {
    const parsed = new X509Certificate(server.certificate)
    expect(parsed.subjectAltName).toBe(
      "IP Address:127.0.0.1, DNS:localhost, DNS:db.example.test, IP Address:0:0:0:0:0:0:0:1"
    )
    expect(parsed.ca).toBe(false)
    expect(new X509Certificate(authority.certificate).ca).toBe(true)
    expect(parsed.checkIssued(new X509Certificate(authority.certificate))).toBe(true)
  })

  it("a kept certificate is reissued when its key differs, another authority signed it, a host is missing, or it ends soon", () => {
    expect(Certificates.stillGood(server.key, server.certificate, authority.certificate, hosts)).toBe(true)
    const other = Certificates.issueServer(authority, "prj_one", hosts)
    expect(Certificates.stillGood(other.key, server.certificate, authority.certificate, hosts)).toBe(false)
    const stranger = Certificates.makeAuthority("stranger")
    expect(Certificates.stillGood(server.key, server.certificate, stranger.certificate, hosts)).toBe(false)
    expect(Certificates.stillGood(server.key, server.certificate, authority.certificate, ["db.other.test"])).toBe(false)
    const short = Certificates.issueServer(authority, "prj_one", hosts, 10)
    expect(Certificates.stillGood(short.key, short.certificate, authority.certificate, hosts)).toBe(false)
    expect(Certificates.stillGood("", "", authority.certificate, hosts)).toBe(false)
  })
})
