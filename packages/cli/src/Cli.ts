import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer } from "effect"
import { CliOutput, Command } from "effect/cli"
import { deploy } from "./commands/Deploy.ts"
import { database } from "./commands/Database.ts"
import { dns } from "./commands/Dns.ts"
import { repos } from "./commands/Repos.ts"
import { domains } from "./commands/Domains.ts"
import { login, logout, whoami } from "./commands/Login.ts"
import { dev } from "./commands/Dev.ts"
import { logs } from "./commands/Logs.ts"
import { access, deployments, hostnames, link, open, orgs, projects, rollback, secrets } from "./commands/Resources.ts"
import { keys, tokens } from "./commands/Account.ts"
import { invites, members } from "./commands/Team.ts"
import { report } from "./Output.ts"
import { httpClient, root } from "./Root.ts"
import { CliEnv } from "./Settings.ts"
import { version } from "./Version.ts"

export { version } from "./Version.ts"

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
  database,
  open,
  members,
  invites,
  tokens,
  keys,
  logs,
  dev
] as const

export const cli = root.pipe(Command.withSubcommands(commands))

/**
 * Help and `--version` as effect/cli prints them; a usage error is left to `report`, which names it in one line
 * instead of printing the whole help.
 */
const presenter = CliOutput.layerPresenter({
  present: (event) => (event._tag === "InvalidInvocation" ? Effect.void : CliOutput.defaultPresenter.present(event))
})

/** Runs the CLI on `args` (without the node and script paths); answers the process exit code. */
export const run = (args: ReadonlyArray<string>): Effect.Effect<number> =>
  Command.runWith(cli, { version })(args).pipe(
    Effect.as(0),
    Effect.catch((error) => report(error, args.includes("--json"))),
    Effect.catchDefect((defect) => report(defect, args.includes("--json"))),
    Effect.provide(Layer.mergeAll(CliEnv.layer, NodeServices.layer, httpClient, presenter))
  ) as Effect.Effect<number>
