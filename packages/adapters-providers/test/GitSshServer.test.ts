import { GitSshServer } from "@hostplane/adapters-providers"
import { describe, expect, it } from "vitest"

describe("GitSshServer", () => {
  // Without the binding every 32 KiB SSH packet creates two ciphers, runs a WebAssembly Poly1305 and goes to the
  // socket in three writes: about 1.5x the server's CPU per clone (bench/README.md, bench:git). The root postinstall
  // builds it for the Node that runs the tests and the server.
  it("ssh2 encrypts with its native crypto binding under this Node", () => {
    expect(
      GitSshServer.cryptoBindingLoaded,
      "ssh2's binding does not load under this Node: npm ci, or `node scripts/ssh2-binding.mjs`, rebuilds it"
    ).toBe(true)
  })

  it("parses the commands git sends over SSH, and nothing else", () => {
    expect(GitSshServer.parseGitCommand("git-upload-pack '/acme/web/site.git'")).toEqual({
      service: "upload-pack",
      path: { orgSlug: "acme", projectName: "web", repoName: "site" }
    })
    expect(GitSshServer.parseGitCommand("git receive-pack 'acme/web/it'\\''s.git'")).toEqual({
      service: "receive-pack",
      path: { orgSlug: "acme", projectName: "web", repoName: "it's" }
    })
    expect(GitSshServer.parseGitCommand("git-upload-archive 'acme/web/site.git'")).toBeUndefined()
    expect(GitSshServer.parseGitCommand("git-upload-pack 'acme/../site.git'")).toBeUndefined()
    expect(GitSshServer.parseGitCommand("sh -c 'id'")).toBeUndefined()
  })
})
