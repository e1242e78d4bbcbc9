import { describe, expect, it } from "vitest"
import { parseDevVars } from "../src/dev/Folder.ts"

/** `.dev.vars` of `hostplane dev`, in dotenv syntax (docs/cli.md). */
describe("parseDevVars", () => {
  it("reads names, export, comments, quotes, escapes and multi-line values", () => {
    const text = [
      "# a comment",
      "A=1",
      "export B = two words  # trailing comment",
      'C="multi\\nline \\"q\\""',
      "D='single # kept'",
      "E=",
      "not an assignment",
      'F="spans',
      'lines"\r',
      "G=x=y",
      ""
    ].join("\n")
    expect(parseDevVars(text)).toEqual({
      A: "1",
      B: "two words",
      C: 'multi\nline "q"',
      D: "single # kept",
      E: "",
      F: "spans\nlines",
      G: "x=y"
    })
  })

  it("a later line wins; an empty file is no secret", () => {
    expect(parseDevVars("K=first\nK=second\n")).toEqual({ K: "second" })
    expect(parseDevVars("")).toEqual({})
  })
})
