export { generateVolume } from './volume';
export { launchStack, type LaunchedStack } from './launch';
