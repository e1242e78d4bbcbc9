import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "..")

/** The Markdown a newcomer reads: the root's, docs/, bench/ and each package's README. */
const pages = (): Array<string> => {
  const found = ["README.md", "ARCHITECTURE.md", "bench/README.md"].map((path) => join(root, path))
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (name.endsWith(".md")) found.push(path)
    }
  }
  walk(join(root, "docs"))
  for (const dir of readdirSync(join(root, "packages"))) {
    const readme = join(root, "packages", dir, "README.md")
    if (existsSync(readme)) found.push(readme)
  }
  return found.filter((path) => existsSync(path))
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-")

const anchors = (text: string): Set<string> => {
  const found = new Set<string>()
  let fenced = false
  for (const line of text.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced
    const heading = !fenced && /^#{1,6} (.*)$/.exec(line)
    if (heading) found.add(slug(heading[1]!))
  }
  return found
}

/** Links outside code: `[text](target)`, with targets that are not URLs. */
const links = (text: string): Array<string> =>
  [
    ...text
      .replace(/```[\s\S]*?```/g, "")
      .replace(/`[^`\n]*`/g, "")
      .matchAll(/\]\(([^)\s]+)\)/g)
  ]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z]+:/i.test(target))

describe("documentation links", () => {
  it.each(pages().map((path) => relative(root, path)))("%s links only to files and headings that exist", (page) => {
    const from = join(root, page)
    const broken: Array<string> = []
    for (const target of links(readFileSync(from, "utf8"))) {
      const [file, anchor] = target.split("#") as [string, string | undefined]
      const path = file === "" ? from : join(dirname(from), file)
      if (!existsSync(path)) {
        broken.push(target)
        continue
      }
      if (anchor !== undefined && path.endsWith(".md") && !anchors(readFileSync(path, "utf8")).has(anchor)) {
        broken.push(target)
      }
    }
    expect(broken).toEqual([])
  })

  it("the README stays a short tour (under 15 KB); the manuals live in docs/", () => {
    expect(statSync(join(root, "README.md")).size).toBeLessThan(15 * 1024)
  })
})
