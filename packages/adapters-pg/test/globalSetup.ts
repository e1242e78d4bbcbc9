import { Effect, Exit, Redacted, Scope } from "effect"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import type { TestProject } from "vitest/node"
// Relative imports: vitest loads this file outside the "@hostplane/source" condition, which would pick up dist/.
import * as EmbeddedPostgres from "../src/embedded/EmbeddedPostgres.ts"
import * as TestDatabase from "../src/testing/TestDatabase.ts"

declare module "vitest" {
  export interface ProvidedContext {
    readonly hostplaneTestPgUrl: string
  }
}

/**
 * Starts one throwaway embedded PostgreSQL for the whole vitest run (unless `TEST_DATABASE_URL` names a server)
 * under a fresh temp directory, so concurrent runs in one tree never share a cluster, and migrates a template
 * database on it once. Test files reach it through `TestDatabase.layer`, which copies the template per file.
 */
export default async function setup(project: TestProject) {
  const scope = Scope.makeUnsafe()
  const close = async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  const external = process.env.TEST_DATABASE_URL ?? ""
  let url = external
  let cleanup = close
  if (external === "") {
    const directory = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-test-pg-"))
    await Fs.chmod(directory, 0o755)
    const server = await Effect.runPromise(
      EmbeddedPostgres.start({ directory, durable: false, maxConnections: 500 }).pipe(Scope.provide(scope))
    )
    url = Redacted.value(server.url)
    process.env[TestDatabase.embeddedUrlVariable] = url
    project.provide("hostplaneTestPgUrl", url)
    cleanup = async () => {
      await close()
      await Fs.rm(directory, { recursive: true, force: true })
    }
  }
  try {
    const template = await Effect.runPromise(TestDatabase.template(Redacted.make(url)).pipe(Scope.provide(scope)))
    process.env[TestDatabase.templateVariable] = template
  } catch (error) {
    await cleanup()
    throw error
  }
  return cleanup
}
