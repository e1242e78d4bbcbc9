import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: { conditions: ["@hostplane/source"] },
  ssr: { resolve: { conditions: ["@hostplane/source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["packages/adapters-pg/test/globalSetup.ts"],
    // Console output (request logs and other server logs) is buffered per test and shown only when it fails.
    silent: "passed-only",
    testTimeout: 30_000,
    hookTimeout: 120_000
  }
})
