import { Layer } from "effect"
import { areaPg } from "../Area.ts"
import createGit from "./migrations/0001_create_git.ts"
import addRepoDeployOnPush from "./migrations/0002_add_repo_deploy_on_push.ts"
import * as CredentialStorePg from "./CredentialStorePg.ts"
import * as RepoStorePg from "./RepoStorePg.ts"

export const GitAreaPg = areaPg({
  name: "git",
  stores: Layer.merge(RepoStorePg.layer, CredentialStorePg.layer),
  migrations: { "0001_create_git": createGit, "0002_add_repo_deploy_on_push": addRepoDeployOnPush }
})
