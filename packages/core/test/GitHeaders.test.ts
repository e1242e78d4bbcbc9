import { assert, describe, it } from "@effect/vitest"
import { type GitHeaders, parseGitHeaders } from "@hostplane/core/deployments/GitHeaders"
import { Result } from "effect"

const accepted = (headers: GitHeaders) => {
  const result = parseGitHeaders(headers)
  if (Result.isFailure(result)) assert.fail(`refused ${JSON.stringify(headers)}: ${result.failure.message}`)
  return result.success
}

const refusedHeader = (headers: GitHeaders) => {
  const result = parseGitHeaders(headers)
  if (Result.isSuccess(result)) assert.fail(`accepted ${JSON.stringify(headers)}`)
  assert.strictEqual(result.failure._tag, "BadRequest")
  return result.failure.details?.["header"]
}

describe("X-Service-Git-* headers (spec 4.3, display only)", () => {
  it("no header at all is git: null", () => {
    assert.isNull(accepted({}))
  })

  it("any one header gives the object, the absent ones null", () => {
    assert.deepStrictEqual(accepted({ dirty: "false" }), { commit: null, message: null, branch: null, dirty: false })
  })

  it("all four decoded", () => {
    assert.deepStrictEqual(
      accepted({
        commit: "0123456789abcdef0123456789abcdef01234567",
        message: "Fix%20the%20caf%C3%A9%20menu",
        branch: "feature%2Fr%C3%A9sum%C3%A9",
        dirty: "true"
      }),
      {
        commit: "0123456789abcdef0123456789abcdef01234567",
        message: "Fix the café menu",
        branch: "feature/résumé",
        dirty: true
      }
    )
  })

  it("X-Service-Git-Commit is 7 to 64 hex characters, stored lowercase", () => {
    assert.strictEqual(accepted({ commit: "abcdef0" })?.commit, "abcdef0")
    assert.strictEqual(accepted({ commit: "ABCDEF0" })?.commit, "abcdef0")
    assert.strictEqual(accepted({ commit: "a".repeat(64) })?.commit, "a".repeat(64))
  })

  it("X-Service-Git-Commit of 6 or 65 characters, or not hex, is 400", () => {
    for (const commit of ["abcdef", "a".repeat(65), "abcdefg", "", " abcdef0", "abcdef0 ", "0x12345678", "abc-def0"]) {
      assert.strictEqual(refusedHeader({ commit }), "X-Service-Git-Commit", commit)
    }
  })

  it("X-Service-Git-Message keeps the first line only", () => {
    assert.strictEqual(accepted({ message: "first%0Asecond" })?.message, "first")
    assert.strictEqual(accepted({ message: "first%0D%0Asecond" })?.message, "first")
    assert.strictEqual(accepted({ message: "first%0Dsecond" })?.message, "first")
  })

  it("X-Service-Git-Message is cut at 200 characters, counting code points (an emoji is one)", () => {
    assert.strictEqual(accepted({ message: "x".repeat(250) })?.message, "x".repeat(200))
    const emoji = encodeURIComponent("😀").repeat(201)
    assert.strictEqual(accepted({ message: emoji })?.message, "😀".repeat(200))
    assert.strictEqual(accepted({ message: encodeURIComponent("é".repeat(200)) })?.message, "é".repeat(200))
  })

  it("X-Service-Git-Message loses control characters; an empty one is null", () => {
    assert.strictEqual(accepted({ message: "a%00b%09c%1Bd%7F" })?.message, "abcd")
    assert.isNull(accepted({ message: "" })?.message)
    assert.isNull(accepted({ message: "%0Aonly the second line" })?.message)
  })

  it("a plain (unencoded) message is taken as is", () => {
    assert.strictEqual(accepted({ message: "Release v1.2 (hotfix)" })?.message, "Release v1.2 (hotfix)")
  })

  it("bad percent-encoding of X-Service-Git-Message is 400", () => {
    for (const message of ["100%", "%zz", "%C3", "%C3%28", "%ED%A0%80", "%FF"]) {
      assert.strictEqual(refusedHeader({ message }), "X-Service-Git-Message", message)
    }
  })

  it("X-Service-Git-Branch is percent-decoded; bad encoding, control characters or over 255 characters are 400", () => {
    assert.strictEqual(accepted({ branch: "main" })?.branch, "main")
    assert.strictEqual(accepted({ branch: "release%2F2026" })?.branch, "release/2026")
    assert.strictEqual(accepted({ branch: "b".repeat(255) })?.branch, "b".repeat(255))
    for (const branch of ["%E0%A4%A", "a%0Ab", "a%00", "b".repeat(256)]) {
      assert.strictEqual(refusedHeader({ branch }), "X-Service-Git-Branch", branch)
    }
  })

  it("X-Service-Git-Dirty is exactly true or false", () => {
    assert.strictEqual(accepted({ dirty: "true" })?.dirty, true)
    assert.strictEqual(accepted({ dirty: "false" })?.dirty, false)
    for (const dirty of ["TRUE", "True", "1", "0", "yes", "", " true"]) {
      assert.strictEqual(refusedHeader({ dirty }), "X-Service-Git-Dirty", dirty)
    }
  })
})
