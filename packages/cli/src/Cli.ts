import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer } from "effect"
import { Command } from "effect/cli"
import { deploy } from "./commands/Deploy.ts"
import { database } from "./commands/Database.ts"
import { dns } from "./commands/Dns.ts"
import { repos } from "./commands/Repos.ts"
import { domains } from "./commands/Domains.ts"
import { login, logout, whoami } from "./commands/Login.ts"
import { access, deployments, hostnames, link, orgs, projects, rollback, secrets } from "./commands/Resources.ts"
import { report } from "./Output.ts"
import { httpClient, root } from "./Root.ts"
import { CliEnv } from "./Settings.ts"

export const version = "0.1.0"

/**
 * The commands under `hostplane`, one entry per area. An area that lands on the server adds its
 * command group here, built on `root` (shared flags), `session` and `resolveProject` from `Root.ts`.
 */
export const commands = [
  login,
  logout,
  whoami,
  link,
  deploy,
  rollback,
  deployments,
  orgs,
  projects,
  secrets,
  hostnames,
  access,
  domains,
  dns,
  repos,
  database
] as const

export const cli = root.pipe(Command.withSubcommands(commands))

/** Runs the CLI on `args` (without the node and script paths); answers the process exit code. */
export const run = (args: ReadonlyArray<string>): Effect.Effect<number> =>
  Command.runWith(cli, { version })(args).pipe(
    Effect.as(0),
    Effect.catch((error) => report(error, args.includes("--json"))),
    Effect.catchDefect((defect) => report(defect, args.includes("--json"))),
    Effect.provide(Layer.mergeAll(CliEnv.layer, NodeServices.layer, httpClient))
  ) as Effect.Effect<number>
