import { readFileSync, statSync } from "node:fs"
import { relative } from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/** Each file's seconds in a whole run on the CI machine (`scripts/test-durations.mjs` writes them after `npm test`). */
export const durationsFile = new URL("../durations.json", import.meta.url)

/**
 * Starts the slowest files first, so no long file starts late and runs alone at the end while the other worker idles.
 * Vitest's own order needs its record of the last run's times, which a fresh clone (CI) lacks: it then orders by file
 * size, and the server tests, short files that start processes and wait on them for a minute, started last. Here a
 * file takes its time from `test/durations.json`; one not listed there (a new file) is estimated from its size at the
 * listed files' seconds per byte. A file that failed in this checkout's last run still comes first, as in vitest.
 */
export class SlowFilesFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const durations = JSON.parse(readFileSync(durationsFile, "utf8")) as Record<string, number>
    const size = (spec: TestSpecification) => statSync(spec.moduleId).size
    const listed = (spec: TestSpecification) =>
      durations[relative(spec.project.config.root, spec.moduleId).split("\\").join("/")]
    const measured = files.filter((spec) => listed(spec) !== undefined)
    const bytes = measured.reduce((sum, spec) => sum + size(spec), 0)
    const perByte = bytes === 0 ? 1 : measured.reduce((sum, spec) => sum + listed(spec)!, 0) / bytes
    const seconds = new Map(files.map((spec) => [spec, listed(spec) ?? size(spec) * perByte]))
    const failed = (spec: TestSpecification) => this.ctx.cache.getTestSpecificationResult(spec)?.failed === true
    return [...files].sort((a, b) => Number(failed(b)) - Number(failed(a)) || seconds.get(b)! - seconds.get(a)!)
  }
}
