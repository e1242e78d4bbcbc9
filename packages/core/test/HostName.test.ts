import { assert, describe, it } from "@effect/vitest"
import * as Kernel from "@hostplane/core/kernel/index"
import { Option, Result, Schema } from "effect"

describe("canonical host names", () => {
  it("lower-cases, trims, strips the trailing dot and converts IDN labels to punycode", () => {
    assert.strictEqual(Kernel.canonicalHost(" WWW.Example.COM. "), "www.example.com")
    assert.strictEqual(Kernel.canonicalHost("Bücher.example."), "xn--bcher-kva.example")
    assert.strictEqual(Kernel.canonicalHost("ｗｗｗ.example.com"), "www.example.com")
    assert.strictEqual(Kernel.canonicalHost("_Service-Verify.Example.com."), "_service-verify.example.com")
  })

  it("leaves what IDNA cannot convert only lower-cased, and parseHost refuses it", () => {
    assert.strictEqual(Kernel.canonicalHost("A B.example"), "a b.example")
    assert.isTrue(Option.isNone(Kernel.parseHost("a b.example")))
    assert.isTrue(Option.isNone(Kernel.parseHost("a/b.example")))
    assert.isTrue(Option.isNone(Kernel.parseHost("")))
    assert.deepStrictEqual(Kernel.parseHost("Bücher.example"), Option.some("xn--bcher-kva.example"))
  })

  it("the HostName schema decodes to the canonical form and refuses non-host names", () => {
    const decode = Schema.decodeUnknownResult(Kernel.HostName)
    assert.deepStrictEqual(decode("Shop.Example.com."), Result.succeed("shop.example.com"))
    assert.isTrue(Result.isFailure(decode("shop example")))
    assert.isTrue(Result.isFailure(decode(42)))
  })
})
