import { defineConfig } from "vitest/config"
import { SlowFilesFirst } from "./test/support/SlowFilesFirst.ts"

export default defineConfig({
  resolve: { conditions: ["@hostplane/source"] },
  ssr: { resolve: { conditions: ["@hostplane/source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["packages/adapters-pg/test/globalSetup.ts"],
    // Each file's CPU, its worker's and its reaped children's, when HOSTPLANE_TEST_CPU_LOG names a file.
    setupFiles: process.env["HOSTPLANE_TEST_CPU_LOG"] ? ["test/support/FileCpu.ts"] : [],
    // Files of one worker share its modules instead of evaluating them again per file (about 40% less CPU), so a
    // test file must leave no global state behind: no process.env writes, global stubs or mocks, timers left faked.
    isolate: false,
    // Three files at once on the 2-core machine CI runs on (vitest's default there is one: cores - 1). Most files
    // wait on child processes (servers, PostgreSQL, git, Chromium) part of the time: with two, a fifth of the run's
    // CPU time was idle; three files filled it (the whole run 696 -> 607 s, every test passing).
    maxWorkers: 3,
    // The slowest files first (test/durations.json): a fresh clone has no times of a last run, and vitest's fallback
    // order (larger files first) started slow files late, running alone at the end while the other worker idled.
    sequence: { sequencer: SlowFilesFirst },
    // Console output (request logs and other server logs) is buffered per test and shown only when it fails.
    silent: "passed-only",
    // The report lists every file with its time; single tests only when really slow (vitest's default is 300 ms).
    slowTestThreshold: 5_000,
    testTimeout: 30_000,
    // Hooks start servers and PostgreSQL clusters, which take minutes on a loaded 2-core machine.
    hookTimeout: 300_000
  }
})
