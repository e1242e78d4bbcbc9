import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll } from "vitest"

/**
 * A `tempDir(prefix)` whose folders are removed once the file's tests are done: call it at a file's top level. A run
 * left each folder the CLI tests made (config dirs, sites, packs) in the system's temp folder.
 */
export const tempDirs = () => {
  const made: Array<string> = []
  afterAll(() => {
    for (const dir of made.splice(0)) Fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 })
  })
  return (prefix: string) => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))
    made.push(dir)
    return dir
  }
}
