import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: { conditions: ["@hostplane/source"] },
  ssr: { resolve: { conditions: ["@hostplane/source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/**/*.test.ts"],
    globalSetup: ["packages/adapters-pg/test/globalSetup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000
  }
})
