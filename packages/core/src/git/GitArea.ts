import { Layer } from "effect"
import { GitStorage } from "./GitStorage.ts"
import { SshKeyParser } from "./SshKeyParser.ts"
import { area, areaSettings } from "../Area.ts"
import { GitConfig } from "./GitConfig.ts"
import { AccessTokens } from "./AccessTokens.ts"
import { CredentialStore } from "./CredentialStore.ts"
import { repoHoldings, repoPurgeHandler, repoTeardown } from "./RepoRetention.ts"
import { Repos } from "./Repos.ts"
import { RepoStore } from "./RepoStore.ts"
import { SshKeys } from "./SshKeys.ts"

/** Spec 4.12: repositories over smart HTTP and SSH, personal access tokens, SSH keys, browsing and ref history. */
export const GitArea = area({
  name: "git",
  ports: [GitStorage.off, SshKeyParser.off],
  settings: areaSettings({ key: "git", make: GitConfig.make, fromEnv: () => GitConfig.layerConfig }),
  stores: [RepoStore, CredentialStore],
  services: Layer.mergeAll(Repos.layer, AccessTokens.layer, SshKeys.layer),
  holdings: [repoHoldings],
  teardown: [repoTeardown],
  jobs: [repoPurgeHandler]
})
