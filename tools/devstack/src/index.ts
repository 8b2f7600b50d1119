export { generateVolume } from './volume';
