import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "..")
const settingName = /^(SERVICE_[A-Z0-9_]+|DATABASE_URL|OTEL_[A-Z0-9_]+)$/

const sources = (folder: "src" | "test"): Array<string> => {
  const found: Array<string> = []
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (/\.tsx?$/.test(name)) found.push(path)
    }
  }
  for (const dir of readdirSync(join(root, "packages"))) {
    const path = join(root, "packages", dir, folder)
    if (
      statSync(join(root, "packages", dir)).isDirectory() &&
      readdirSync(join(root, "packages", dir)).includes(folder)
    )
      walk(path)
  }
  return found
}

/** The code without its comments, so a name a comment mentions is not taken for one the code reads. */
const code = (path: string) =>
  readFileSync(path, "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1")

/** Every setting name the code spells out as a string, with the files that read it. */
const readBy = (folder: "src" | "test"): Map<string, Array<string>> => {
  const names = new Map<string, Array<string>>()
  for (const path of sources(folder)) {
    const text = code(path)
    const spelled = [
      ...text.matchAll(/["'`]((?:SERVICE_[A-Z0-9_]+|(?:TEST_)?DATABASE_URL|OTEL_[A-Z0-9_]+))["'`]/g),
      ...text.matchAll(/process\.env\.((?:SERVICE_[A-Z0-9_]+|(?:TEST_)?DATABASE_URL|OTEL_[A-Z0-9_]+))\b/g)
    ]
    for (const match of spelled) {
      names.set(match[1]!, [...(names.get(match[1]!) ?? []), relative(root, path)])
    }
  }
  return names
}

/** Names built at run time from a prefix (`SERVICE_AUTH_${provider}`): the doc spells them with a placeholder. */
const templated = (): Array<string> => {
  const prefixes: Array<string> = []
  for (const path of sources("src")) {
    for (const match of code(path).matchAll(/`(SERVICE_[A-Z0-9_]*)\$\{/g)) prefixes.push(match[1]!)
  }
  return prefixes
}

interface Row {
  readonly names: ReadonlyArray<string>
  readonly default: string
}

/** The settings table of docs/settings.md: names in the first column (`<P>` placeholders kept), the default next. */
const documented = (): Array<Row> =>
  readFileSync(join(root, "docs", "settings.md"), "utf8")
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => {
      const cells = line.split(" | ")
      return {
        names: [...cells[0]!.matchAll(/`((?:SERVICE_|DATABASE_URL|TEST_|OTEL_)[A-Z0-9_<>]*)`/g)].map(
          (match) => match[1]!
        ),
        default: cells[1] ?? ""
      }
    })

/** `Config.X("NAME").pipe(Config.withDefault(value))` in the code: the default as the doc writes it. */
const codeDefaults = (): Map<string, string> => {
  const defaults = new Map<string, string>()
  // Numbers a default may name instead of writing (`Duration.millis(visitorCallTimeout)`): `export const x = 10_000`.
  const constants = new Map<string, number>()
  for (const path of sources("src")) {
    for (const match of code(path).matchAll(/^export const (\w+) = ([\d_]+)$/gm)) {
      constants.set(match[1]!, Number(match[2]!.replaceAll("_", "")))
    }
  }
  const seconds = (count: number) => `${count} ${count === 1 ? "second" : "seconds"}`
  for (const path of sources("src")) {
    const text = code(path)
    for (const match of text.matchAll(/Config\.\w+\("([A-Z0-9_]+)"\)\.pipe\(\s*Config\.withDefault\(/g)) {
      let depth = 1
      let end = match.index + match[0].length
      while (depth > 0 && end < text.length) {
        if (text[end] === "(") depth++
        if (text[end] === ")") depth--
        end++
      }
      const value = text.slice(match.index + match[0].length, end - 1).trim()
      const literal = /^"([^"]*)"$/.exec(value)
      const duration = /^Duration\.(seconds|minutes|hours|days)\((\d+)\)$/.exec(value)
      const millisOf = /^Duration\.millis\(([\w]+)\)$/.exec(value)?.[1]
      const millis =
        millisOf === undefined
          ? undefined
          : /^[\d_]+$/.test(millisOf)
            ? Number(millisOf.replaceAll("_", ""))
            : constants.get(millisOf)
      const product = /^\d+(\s*\*\s*\d+)*$/.test(value)
      const shown = literal
        ? literal[1]!
        : value === "true" || value === "false"
          ? value
          : duration
            ? `${duration[2]} ${duration[2] === "1" ? duration[1]!.slice(0, -1) : duration[1]}`
            : millis !== undefined
              ? millis % 1000 === 0
                ? seconds(millis / 1000)
                : `${millis} milliseconds`
              : product
                ? String(value.split("*").reduce((total, factor) => total * Number(factor), 1))
                : undefined
      if (shown === undefined) throw new Error(`${relative(root, path)}: a default this test cannot read: ${value}`)
      const earlier = defaults.get(match[1]!)
      if (earlier !== undefined && earlier !== shown) {
        throw new Error(`${match[1]} has two defaults in the code: ${earlier} and ${shown}`)
      }
      defaults.set(match[1]!, shown)
    }
  }
  return defaults
}

describe("docs/settings.md against the code", () => {
  const rows = documented()
  const inDoc = new Set(rows.flatMap((row) => row.names))

  it("documents every setting packages/*/src reads", () => {
    const missing = [...readBy("src").entries()]
      .filter(([name]) => settingName.test(name) && !inDoc.has(name))
      .map(([name, files]) => `${name} (${[...new Set(files)].join(", ")})`)
    expect(missing).toEqual([])
  })

  it("documents only settings the code reads (tests' own settings read by the tests)", () => {
    const read = new Set([...readBy("src").keys(), ...readBy("test").keys()])
    const prefixes = templated()
    const unknown = [...inDoc].filter((name) =>
      name.includes("<") ? !prefixes.some((prefix) => name.startsWith(prefix)) : !read.has(name)
    )
    expect(unknown).toEqual([])
  })

  it("gives each default the code declares, as the code has it", () => {
    const wrong: Array<string> = []
    for (const [name, value] of codeDefaults()) {
      const row = rows.find((candidate) => candidate.names.includes(name))
      if (row !== undefined && !row.default.includes(`\`${value}\``)) {
        wrong.push(`${name}: the code's default is ${value}, the doc says ${row.default}`)
      }
    }
    expect(wrong).toEqual([])
  })

  it("finds the settings it checks (the scan is not empty)", () => {
    expect(readBy("src").size).toBeGreaterThan(50)
    expect(codeDefaults().size).toBeGreaterThan(5)
  })
})
