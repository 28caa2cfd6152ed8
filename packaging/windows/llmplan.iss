; Inno Setup 6 script: the Windows installer for the PyInstaller folder dist\llmplan\.
; It installs llmplan for the user (or, if chosen, for all users), adds a Start-menu entry and
; associates .llmplan files with llmplan.exe, so a double-clicked plan opens in the app.
;
; Build on Windows, from the repository root (see docs/install.md):
;   pyinstaller --noconfirm packaging\llmplan.spec
;   for /f %v in ('python packaging\bundle_meta.py') do iscc /DAppVersion=%v packaging\windows\llmplan.iss
; Output: dist\llmplan-VERSION-windows-x64-setup.exe
;
; The version is never written here: it comes from llmplan.__version__ through /DAppVersion.

#ifndef AppVersion
  #error Pass the version: iscc /DAppVersion=X.Y.Z (python packaging\bundle_meta.py prints it)
#endif

#define AppExe "llmplan.exe"
#define ProgId "llmplan.plan"

[Setup]
; A fixed id: upgrades replace the installed version instead of adding a second one.
AppId={{43025B46-577F-4C3D-B8A1-42CF8BDBE022}
AppName=llmplan
AppVersion={#AppVersion}
AppVerName=llmplan {#AppVersion}
AppPublisher=llmplan developers
VersionInfoVersion={#AppVersion}
DefaultDirName={autopf}\llmplan
DefaultGroupName=llmplan
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
ChangesAssociations=yes
SetupIconFile=..\..\resources\appicon\llmplan.ico
UninstallDisplayIcon={app}\{#AppExe}
OutputDir=..\..\dist
OutputBaseFilename=llmplan-{#AppVersion}-windows-x64-setup
Compression=lzma2
SolidCompression=yes
WizardStyle=modern

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "..\..\dist\llmplan\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\llmplan"; Filename: "{app}\{#AppExe}"
Name: "{autodesktop}\llmplan"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Registry]
; .llmplan -> the llmplan.plan ProgID; HKA is HKCU for a per-user install, HKLM for all users.
Root: HKA; Subkey: "Software\Classes\.llmplan"; ValueType: string; ValueName: ""; ValueData: "{#ProgId}"; Flags: uninsdeletevalue
Root: HKA; Subkey: "Software\Classes\.llmplan"; ValueType: string; ValueName: "Content Type"; ValueData: "application/x-llmplan"; Flags: uninsdeletevalue
Root: HKA; Subkey: "Software\Classes\.llmplan\OpenWithProgids"; ValueType: string; ValueName: "{#ProgId}"; ValueData: ""; Flags: uninsdeletevalue
Root: HKA; Subkey: "Software\Classes\{#ProgId}"; ValueType: string; ValueName: ""; ValueData: "llmplan hardware plan"; Flags: uninsdeletekey
Root: HKA; Subkey: "Software\Classes\{#ProgId}\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: "{app}\{#AppExe},0"
Root: HKA; Subkey: "Software\Classes\{#ProgId}\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\{#AppExe}"" ""%1"""
Root: HKA; Subkey: "Software\Classes\Applications\{#AppExe}\SupportedTypes"; ValueType: string; ValueName: ".llmplan"; ValueData: ""; Flags: uninsdeletekey

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,llmplan}"; Flags: nowait postinstall skipifsilent
