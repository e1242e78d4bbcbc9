import * as Fs from "node:fs"

/** Processes under `pid` (itself included) whose command name is `name`. */
export const descendantsNamed = (name: string) => (pid: number) => {
  const children = new Map<number, Array<number>>()
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = Fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)])
    } catch {
      // gone meanwhile
    }
  }
  const found: Array<number> = []
  const walk = (current: number) => {
    try {
      if (Fs.readFileSync(`/proc/${current}/comm`, "utf8").trim() === name) found.push(current)
    } catch {
      return
    }
    for (const child of children.get(current) ?? []) walk(child)
  }
  walk(pid)
  return found
}
