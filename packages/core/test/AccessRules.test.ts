import { assert, describe, it } from "@effect/vitest"
import { Access } from "@hostplane/core"
import { Result, Schema } from "effect"

const decodeInput = Schema.decodeUnknownResult(Access.SetAccessPolicyInput)
const decodeNext = Schema.decodeUnknownResult(Access.NextPath)

describe("AccessRules (spec 4.11)", () => {
  describe("safeNextPath: next is a path only", () => {
    const accepted = [
      "/",
      "/dashboard",
      "/a/b/c?x=1&y=2#section",
      "/?next=/other",
      "/search?q=hello%20world",
      "/path/with//double/slash",
      "/files/%E2%82%AC",
      "/ünïcödé/路径",
      "/a/../b",
      "/.well-known/thing",
      "/redirect?to=https://evil.example",
      "/" + "a".repeat(Access.maxNextPathLength - 1)
    ]
    const refused: Array<[string, string]> = [
      ["", "empty"],
      ["dashboard", "relative, no leading slash"],
      ["./dashboard", "relative"],
      ["?x=1", "query only"],
      ["#top", "fragment only"],
      ["//evil.com", "protocol-relative (address-like, two slashes)"],
      ["///evil.com", "three slashes"],
      ["//evil.com/path", "protocol-relative with path"],
      ["https://evil.com", "absolute URL"],
      ["http:/evil.com", "scheme with one slash"],
      ["javascript:alert(1)", "javascript scheme"],
      ["data:text/html,<script>alert(1)</script>", "data scheme"],
      ["/\\evil.com", "slash-backslash, read as // by browsers"],
      ["\\\\evil.com", "two backslashes"],
      ["\\/evil.com", "backslash-slash"],
      ["/foo\\bar", "backslash anywhere"],
      ["/\t/evil.com", "tab dropped by browsers, leaving //"],
      ["/\n/evil.com", "newline dropped by browsers"],
      ["/\r\nSet-Cookie: x=1", "CR LF header split"],
      ["/\u0000", "NUL"],
      ["/\u007f", "DEL"],
      ["/\u0085", "C1 control"],
      ["/ /evil.com", "space"],
      ["/a b", "space inside"],
      ["/\u00a0", "no-break space"],
      ["/\u2028", "line separator"],
      ["/\u200b/evil.com", "zero-width space"],
      ["/\u202eevil", "bidi override"],
      ["/\ufeff", "byte order mark"],
      [" /dashboard", "leading space"],
      ["/%2F/evil.com", "encoded second slash"],
      ["/%2f%2fevil.com", "encoded slashes, lower case"],
      ["/%5Cevil.com", "encoded backslash"],
      ["/%5cevil.com", "encoded backslash, lower case"],
      ["/foo%5Cbar", "encoded backslash anywhere"],
      ["/%0d%0aSet-Cookie:%20x=1", "encoded CR LF"],
      ["/%09/evil.com", "encoded tab"],
      ["/%00", "encoded NUL"],
      ["/%", "bad percent-encoding"],
      ["/%zz", "bad percent-encoding"],
      ["/%E2%82", "truncated UTF-8"],
      ["/..//evil.com", "dot segments resolving to //"],
      ["/a/../..//evil.com", "dot segments resolving to //"],
      ["/.//evil.com", "dot segment resolving to //"],
      ["/..%2F%2Fevil.com", "encoded dot segments resolving to //"],
      ["/" + "a".repeat(Access.maxNextPathLength), "too long"]
    ]

    for (const next of accepted) {
      it(`accepts ${JSON.stringify(next.length > 60 ? `${next.slice(0, 20)}...(${next.length})` : next)}`, () => {
        assert.isTrue(Access.safeNextPath(next))
        assert.isTrue(Result.isSuccess(decodeNext(next)))
      })
    }

    for (const [next, why] of refused) {
      it(`refuses ${JSON.stringify(next.length > 60 ? `${next.slice(0, 20)}...(${next.length})` : next)}: ${why}`, () => {
        assert.isFalse(Access.safeNextPath(next))
        assert.isTrue(Result.isFailure(decodeNext(next)))
      })
    }
  })

  describe("PUT .../access body", () => {
    it("mode is public, org or password; password is optional", () => {
      for (const mode of ["public", "org", "password"] as const) {
        const result = decodeInput({ mode })
        assert.isTrue(Result.isSuccess(result), mode)
        if (Result.isSuccess(result)) assert.deepStrictEqual(result.success, { mode })
      }
      for (const body of [{}, { mode: "private" }, { mode: "PUBLIC" }, { mode: 1 }, null, "public"]) {
        assert.isTrue(Result.isFailure(decodeInput(body)), JSON.stringify(body))
      }
    })

    it("password is 8 to 200 characters: 7 and 201 are refused, 8 and 200 accepted", () => {
      const ok = (password: unknown) => Result.isSuccess(decodeInput({ mode: "password", password }))
      assert.isFalse(ok("a".repeat(7)))
      assert.isTrue(ok("a".repeat(8)))
      assert.isTrue(ok("a".repeat(200)))
      assert.isFalse(ok("a".repeat(201)))
      assert.isFalse(ok(""))
      assert.isFalse(ok(12345678))
      assert.isFalse(ok(null))
    })

    it("password length counts characters (code points), not UTF-16 units", () => {
      const ok = (password: string) => Result.isSuccess(decodeInput({ mode: "password", password }))
      assert.isFalse(ok("🔑".repeat(7)), "7 emoji are 14 UTF-16 units but 7 characters")
      assert.isTrue(ok("🔑".repeat(8)))
      assert.isTrue(ok("🔑".repeat(200)), "200 emoji are 400 UTF-16 units but 200 characters")
      assert.isFalse(ok("🔑".repeat(201)))
    })

    it("a password is kept as typed, spaces included", () => {
      const result = decodeInput({ mode: "org", password: "  spaced out  " })
      assert.isTrue(Result.isSuccess(result))
      if (Result.isSuccess(result)) assert.strictEqual(result.success.password, "  spaced out  ")
    })

    it("unknown fields are ignored, never applied", () => {
      const result = decodeInput({ mode: "public", hasBypass: true, projectId: "prj_x" })
      assert.isTrue(Result.isSuccess(result))
      if (Result.isSuccess(result)) assert.deepStrictEqual(result.success, { mode: "public" })
    })
  })
})
